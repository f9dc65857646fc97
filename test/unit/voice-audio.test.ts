import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import {
  checkPcmFormat,
  decodePcm,
  floatToS16le,
  PcmToPipeline,
  rms,
  toPipelineAudio,
} from '../../agent/workloads/audio/pcm.js';
import { encodeWavS16, parseWav, WavFormatError } from '../../lib/audio/wav.js';
import { mediaFixturesDir } from '../helpers/paths.js';

const speech16k = join(mediaFixturesDir, 'speech-hello-16k.wav');
const speech48k = join(mediaFixturesDir, 'speech-hello-48k-stereo.wav');

test('parseWav reads the 16 kHz mono fixture', (t) => {
  const wav = parseWav(readFileSync(speech16k));
  t.is(wav.sampleRate, 16000);
  t.is(wav.channels.length, 1);
  t.is(wav.channels[0]!.length, 33631);
});

test('48 kHz stereo converts to 16 kHz mono close to the 16 kHz original', (t) => {
  const ref = parseWav(readFileSync(speech16k)).channels[0]!;
  const wav = parseWav(readFileSync(speech48k));
  t.is(wav.sampleRate, 48000);
  t.is(wav.channels.length, 2);
  const mono = toPipelineAudio(wav.channels, wav.sampleRate);
  t.is(mono.length, 33631);
  let err = 0;
  for (let i = 0; i < mono.length; i++) err += (mono[i]! - ref[i]!) ** 2;
  const snrDb = 10 * Math.log10((rms(ref) ** 2 * ref.length) / err);
  t.true(snrDb > 30, `conversion SNR ${snrDb.toFixed(1)} dB`);
});

test('a WAV written by encodeWavS16 reads back sample for sample', (t) => {
  const samples = Float32Array.from({ length: 1000 }, (_, i) => Math.sin(i / 10) * 0.5);
  const wav = parseWav(encodeWavS16(floatToS16le(samples), 22050));
  t.is(wav.sampleRate, 22050);
  const back = wav.channels[0]!;
  t.true(back.every((v, i) => Math.abs(v - samples[i]!) < 1 / 16384));
});

test('bad audio gets specific errors', (t) => {
  // One parser, one error type: a WavFormatError with the workloads' code for bad audio.
  t.throws(() => parseWav(Buffer.from('hello world, not audio')), {
    instanceOf: WavFormatError,
    code: 'EAUDIO',
    message: 'Not a WAV file: the RIFF/WAVE header is missing',
  });
  t.throws(() => parseWav(encodeWavS16(Buffer.alloc(0), 16000)), {
    message: 'WAV file contains no audio samples',
  });
  const alaw = encodeWavS16(Buffer.alloc(100), 8000);
  alaw.writeUInt16LE(6, 20);
  alaw.writeUInt16LE(8, 34);
  t.throws(() => parseWav(alaw), {
    message:
      'Unsupported WAV encoding (format 6, 8 bits): expected integer PCM of 8/16/24/32 bits or float32',
  });
  t.throws(() => checkPcmFormat({ sampleRate: 4000, channels: 1, format: 's16le' }), {
    message: 'Unsupported sample rate 4000: expected an integer from 8000 to 192000 Hz',
  });
  t.throws(() => checkPcmFormat({ sampleRate: 16000, channels: 6, format: 's16le' }), {
    message: 'Unsupported channel count 6: expected 1 or 2',
  });
  t.throws(() => checkPcmFormat({ sampleRate: 16000, channels: 1, format: 'mp3' }), {
    message: 'Unsupported sample format "mp3": expected "s16le" or "f32le"',
  });
  const fmt = checkPcmFormat({ sampleRate: 16000, channels: 2, format: 's16le' });
  t.throws(() => decodePcm(Buffer.alloc(6), fmt), {
    message: 'PCM chunk of 6 bytes is not a whole number of s16le 2-channel frames (4 bytes each)',
  });
});

test('decodePcm splits interleaved channels and reads f32le', (t) => {
  const s16 = Buffer.alloc(8);
  s16.writeInt16LE(16384, 0);
  s16.writeInt16LE(-16384, 2);
  s16.writeInt16LE(32767, 4);
  s16.writeInt16LE(-32768, 6);
  const [l, r] = decodePcm(s16, { sampleRate: 16000, channels: 2, format: 's16le' });
  t.deepEqual([...l!], [0.5, 32767 / 32768]);
  t.deepEqual([...r!], [-0.5, -1]);
  const f32 = Buffer.alloc(8);
  f32.writeFloatLE(0.25, 0);
  f32.writeFloatLE(-0.75, 4);
  t.deepEqual([...decodePcm(f32, { sampleRate: 16000, channels: 1, format: 'f32le' })[0]!], [0.25, -0.75]);
});

test('streaming conversion gives the same samples whatever the chunk sizes', (t) => {
  const wav = parseWav(readFileSync(speech48k));
  const whole = toPipelineAudio(wav.channels, wav.sampleRate);
  const bytes = readFileSync(speech48k).subarray(44);
  const conv = new PcmToPipeline({ sampleRate: 48000, channels: 2, format: 's16le' });
  const parts: Float32Array[] = [];
  let at = 0;
  for (const size of [4, 4000, 1236, 96000, 7]) {
    const n = size * 4;
    parts.push(conv.push(bytes.subarray(at, Math.min(bytes.length, at + n))));
    at += n;
  }
  parts.push(conv.push(bytes.subarray(at)));
  parts.push(conv.flush());
  const joined = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    joined.set(p, o);
    o += p.length;
  }
  t.is(joined.length, whole.length);
  t.true(joined.every((v, i) => Math.abs(v - whole[i]!) < 1e-5));
});
