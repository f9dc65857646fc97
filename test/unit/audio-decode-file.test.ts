// Audio files of any common format and rate to 16 kHz mono (lib/audio/decode-file.ts): the media fixtures, a
// 24-bit WAV written here, and an OGG made with ffmpeg where it is installed.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { concat } from '../../engine/tools/wake-keyword/speech.js';
import { AudioDecodeError, decodeAudioFile, ffmpegPath, mixToMono } from '../../lib/audio/decode-file.js';
import { parseWav } from '../../lib/audio/wav.js';
import { mediaFixturesDir } from '../helpers/paths.js';

const speech16k = join(mediaFixturesDir, 'speech-hello-16k.wav');
const speech48k = join(mediaFixturesDir, 'speech-hello-48k-stereo.wav');
const ffmpeg = ffmpegPath();

/** The whole file, its chunks joined as the wake keyword generator joins them (decoded-cache.ts). */
async function decodeAll(path: string, ffmpegBin: string | null = ffmpeg ?? null): Promise<Float32Array> {
  const parts: Float32Array[] = [];
  for await (const c of decodeAudioFile(path, { ffmpeg: ffmpegBin, chunk: 4000 })) parts.push(c);
  return concat(parts);
}

function snrDb(ref: Float32Array, got: Float32Array): number {
  let sig = 0;
  let err = 0;
  for (let i = 0; i < ref.length; i++) {
    sig += ref[i]! ** 2;
    err += (ref[i]! - (got[i] ?? 0)) ** 2;
  }
  return 10 * Math.log10(sig / err);
}

/** A 24-bit PCM WAV of the given mono samples at `rate`, `channels` copies. */
function wav24(samples: Float32Array, rate: number, channels: number): Buffer {
  const data = Buffer.alloc(samples.length * 3 * channels);
  for (let i = 0; i < samples.length; i++)
    for (let c = 0; c < channels; c++)
      data.writeIntLE(
        Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 8388607),
        (i * channels + c) * 3,
        3,
      );
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * channels * 3, 28);
  h.writeUInt16LE(channels * 3, 32);
  h.writeUInt16LE(24, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

test('a 16 kHz mono WAV comes out sample for sample, in chunks', async (t) => {
  const ref = parseWav(readFileSync(speech16k)).channels[0]!;
  const got = await decodeAll(speech16k, null);
  t.is(got.length, ref.length);
  t.deepEqual(Array.from(got.subarray(0, 100)), Array.from(ref.subarray(0, 100)));
});

test('a 48 kHz stereo WAV is mixed and resampled, not dropped: close to the 16 kHz original', async (t) => {
  const ref = parseWav(readFileSync(speech16k)).channels[0]!;
  const got = await decodeAll(speech48k, null);
  t.is(got.length, ref.length);
  t.true(snrDb(ref, got) > 30, `SNR ${snrDb(ref, got).toFixed(1)} dB`);
});

test('a 24-bit 22.05 kHz stereo WAV is read without ffmpeg', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'decode-'));
  try {
    const n = 22050;
    const tone = Float32Array.from({ length: n }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / 22050));
    writeFileSync(join(dir, 'tone.wav'), wav24(tone, 22050, 2));
    const got = await decodeAll(join(dir, 'tone.wav'), null);
    t.is(got.length, 16000);
    const expected = Float32Array.from(
      { length: 16000 },
      (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / 16000),
    );
    t.true(snrDb(expected.subarray(100, 15900), got.subarray(100, 15900)) > 30);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('part: a WAV is cut to the seconds asked for, sample for sample', async (t) => {
  const whole = await decodeAll(speech16k);
  const parts: Float32Array[] = [];
  for await (const c of decodeAudioFile(speech16k, { ffmpeg: null, part: { from: 0.25, seconds: 0.5 } }))
    parts.push(c);
  const got = Float32Array.from(parts.flatMap((p) => [...p]));
  t.is(got.length, 8000);
  t.deepEqual(got, whole.subarray(4000, 12000));
});

test('mixToMono averages the channels', (t) => {
  t.deepEqual(Array.from(mixToMono([Float32Array.of(1, 0), Float32Array.of(0, 0.5)])), [0.5, 0.25]);
});

test('an OGG needs ffmpeg: without it the file is refused with a message saying so', async (t) => {
  const err = await t.throwsAsync(decodeAll('/somewhere/music.ogg', null), { instanceOf: AudioDecodeError });
  t.regex(err!.message, /music\.ogg: \.ogg needs ffmpeg, which is not installed/);
});

test('a file that is not audio is named in the error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'decode-'));
  try {
    writeFileSync(join(dir, 'notes.wav'), 'not a wav at all');
    const err = await t.throwsAsync(decodeAll(join(dir, 'notes.wav')), { instanceOf: AudioDecodeError });
    t.regex(err!.message, /notes\.wav: Not a WAV file/);
    const missing = await t.throwsAsync(decodeAll(join(dir, 'gone.wav')), { instanceOf: AudioDecodeError });
    t.regex(missing!.message, /gone\.wav: cannot be read \(ENOENT\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

if (ffmpeg) {
  test('part: an OGG is decoded from a seek, only the seconds asked for', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'decode-part-'));
    try {
      const ogg = join(dir, 'speech.ogg');
      execFileSync(ffmpeg, ['-v', 'error', '-i', speech16k, '-c:a', 'libvorbis', ogg]);
      const parts: Float32Array[] = [];
      for await (const c of decodeAudioFile(ogg, { part: { from: 0.2, seconds: 0.4 } })) parts.push(c);
      const n = parts.reduce((k, p) => k + p.length, 0);
      // The codec's frames may round the cut by a few milliseconds, never by the rest of the file.
      t.true(Math.abs(n - 6400) <= 160, `${n} samples`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an OGG Vorbis at 44.1 kHz stereo comes through ffmpeg as 16 kHz mono', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'decode-'));
    try {
      const ogg = join(dir, 'hello.ogg');
      execFileSync(ffmpeg, ['-v', 'error', '-i', speech48k, '-ar', '44100', '-c:a', 'libvorbis', ogg]);
      const ref = parseWav(readFileSync(speech16k)).channels[0]!;
      const got = await decodeAll(ogg);
      t.true(Math.abs(got.length - ref.length) < 1600, `${got.length} samples against ${ref.length}`);
      const corrupt = join(dir, 'broken.ogg');
      writeFileSync(corrupt, readFileSync(ogg).subarray(0, 200));
      const err = await t.throwsAsync(decodeAll(corrupt), { instanceOf: AudioDecodeError });
      t.regex(err!.message, /broken\.ogg/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
} else {
  test.skip('SKIP OGG through ffmpeg: ffmpeg is not installed', () => {});
}
