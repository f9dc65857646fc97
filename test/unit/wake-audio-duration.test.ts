// Durations from the files' own headers (engine/tools/wake-keyword/audio-duration.ts) against ffprobe's, for the
// formats the real-audio sources ship: WAV, Ogg Vorbis, Opus, FLAC.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { audioSeconds } from '../../engine/tools/wake-keyword/audio-duration.js';
import { ffmpegPath } from '../../lib/audio/decode-file.js';
import { mediaFixturesDir } from '../helpers/paths.js';

const stereo = join(mediaFixturesDir, 'speech-hello-48k-stereo.wav');

test('a WAV: data bytes over the byte rate', async (t) => {
  t.is(Math.round((await audioSeconds(stereo)) * 1000), 2102);
  t.is(Math.round((await audioSeconds(join(mediaFixturesDir, 'speech-hello-16k.wav'))) * 1000), 2102);
});

const ffmpeg = ffmpegPath();
if (ffmpeg) {
  test('Ogg Vorbis, Opus and FLAC made by ffmpeg: within 10 ms of the WAV they came from', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'duration-'));
    try {
      for (const [name, codec] of [
        ['a.ogg', 'libvorbis'],
        ['a.opus', 'libopus'],
        ['a.flac', 'flac'],
      ] as const) {
        const out = join(dir, name);
        execFileSync(ffmpeg, ['-v', 'error', '-i', stereo, '-c:a', codec, out]);
        const s = await audioSeconds(out);
        t.true(Math.abs(s - 2.102) < 0.01, `${name}: ${s}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
} else test.skip('SKIP Ogg/Opus/FLAC durations: ffmpeg is not installed', () => {});
