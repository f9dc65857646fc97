// The board's audio plumbing (arecord in, aplay out) with stand-in commands that take the same arguments:
// sox plays the microphone, a shell script plays the speaker. The processes, pipes and kills are real.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { AplaySink, arecordSource, WavFileSink, wavFileSource } from '../../agent/workloads/audio/io.js';
import { parseWav } from '../../lib/audio/wav.js';
import { mediaFixturesDir } from '../helpers/paths.js';

const speech = join(mediaFixturesDir, 'speech-hello-48k-stereo.wav');

function script(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

test('arecord source: raw s16le from the capture command becomes 16 kHz float chunks', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-io-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Records its arguments, then "captures" the fixture as arecord would deliver it.
  const fake = script(
    dir,
    'arecord',
    `echo "$@" > ${dir}/args\nexec sox -D ${speech} -t raw -r 16000 -c 1 -e signed -b 16 -`,
  );
  let samples = 0;
  for await (const chunk of arecordSource('hw:1,0', new AbortController().signal, fake))
    samples += chunk.length;
  t.is(readFileSync(join(dir, 'args'), 'utf8').trim(), '-q -D hw:1,0 -t raw -f S16_LE -r 16000 -c 1');
  t.true(Math.abs(samples - 33631) <= 1, `${samples} samples`);
});

test('arecord source: a failing capture command is reported with its stderr', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-io-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const fake = script(
    dir,
    'arecord',
    'echo "arecord: main:831: audio open error: No such file or directory" >&2\nexit 1',
  );
  await t.throwsAsync(
    (async () => {
      for await (const _ of arecordSource('hw:9,0', new AbortController().signal, fake)) {
        // nothing comes
      }
    })(),
    {
      message: `${fake} -D hw:9,0 exited with code 1: arecord: main:831: audio open error: No such file or directory`,
    },
  );
  await t.throwsAsync(
    (async () => {
      for await (const _ of arecordSource('default', new AbortController().signal, join(dir, 'missing'))) {
        // nothing comes
      }
    })(),
    { code: 'ETOOL', message: /^Cannot run .*missing: spawn .* ENOENT \(install alsa-utils\)$/ },
  );
});

test('aplay sink: PCM reaches the playback command; a flush (barge-in) kills it at once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-io-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const fake = script(dir, 'aplay', `echo "$@" > ${dir}/args\nexec cat > ${dir}/played.raw`);
  const sink = new AplaySink('plughw:0', fake);
  sink.write(new Float32Array(2205).fill(0.5), 22050);
  await sink.close();
  t.is(readFileSync(join(dir, 'args'), 'utf8').trim(), '-q -D plughw:0 -t raw -f S16_LE -r 22050 -c 1');
  const played = readFileSync(join(dir, 'played.raw'));
  t.is(played.length, 4410);
  t.is(played.readInt16LE(0), Math.round(0.5 * 32767));
  sink.write(new Float32Array(100), 22050);
  sink.flush();
  await sink.close();
});

test('WAV source and sink: a file in, a 16-bit WAV out', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-io-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const sink = new WavFileSink(join(dir, 'out.wav'));
  let chunks = 0;
  for await (const chunk of wavFileSource(speech, 100)) {
    sink.write(chunk, 16000);
    chunks++;
  }
  await sink.close();
  t.is(chunks, 22);
  const out = parseWav(readFileSync(join(dir, 'out.wav')));
  t.is(out.sampleRate, 16000);
  t.is(out.channels[0]!.length, 33631);
  await t.throwsAsync(
    (async () => {
      for await (const _ of wavFileSource(join(dir, 'nope.wav'))) {
        // nothing
      }
    })(),
    { code: 'EAUDIO', message: /^Cannot read WAV file .*nope\.wav: ENOENT/ },
  );
  // A file that is there but is no WAV: the parser's own error, with the same code.
  writeFileSync(join(dir, 'text.wav'), 'not audio');
  await t.throwsAsync(
    (async () => {
      for await (const _ of wavFileSource(join(dir, 'text.wav'))) {
        // nothing
      }
    })(),
    { code: 'EAUDIO', message: 'Not a WAV file: the RIFF/WAVE header is missing' },
  );
});
