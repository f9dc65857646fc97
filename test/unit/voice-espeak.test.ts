import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { EspeakTts } from '../../agent/workloads/voice/stages.js';
import { until } from '../helpers/until.js';

// EspeakTts with a stand-in for espeak-ng: a script that logs its pid when it starts, waits for its text on stdin
// and writes a WAV (44-byte header, 22050 Hz, then four samples) to stdout, as `espeak-ng --stdout --stdin` does.

function standIn(dir: string): { command: string; started: () => number[] } {
  const log = join(dir, 'started');
  writeFileSync(log, '');
  const command = join(dir, 'espeak-ng');
  writeFileSync(
    command,
    [
      '#!/bin/sh',
      `echo $$ >> '${log}'`,
      'cat > /dev/null',
      String.raw`printf 'RIFF\377\377\377\377WAVEfmt \020\000\000\000\001\000\001\000\042\126\000\000\104\254\000\000\002\000\020\000data\377\377\377\377'`,
      String.raw`printf '\001\000\002\000\003\000\004\000'`,
      '',
    ].join('\n'),
  );
  chmodSync(command, 0o755);
  const started = () =>
    readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l.length > 0)
      .map(Number);
  return { command, started };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('prepare() starts espeak-ng ahead of its sentence, and synthesize() speaks through that process', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-espeak-'));
  try {
    const { command, started } = standIn(dir);
    const tts = new EspeakTts({ command });
    const signal = new AbortController().signal;
    tts.prepare();
    tts.prepare();
    await until(() => started().length === 1, 'the prepared process to start');
    const samples: number[] = [];
    for await (const chunk of tts.synthesize('Hello there.', signal)) {
      t.is(chunk.sampleRate, 22050);
      samples.push(...Array.from(chunk.samples, (v) => Math.round(v * 32768)));
    }
    t.deepEqual(samples, [1, 2, 3, 4]);
    t.is(started().length, 1, 'the sentence went to the prepared process, no other started');

    // Unprepared: a process of its own, as before.
    for await (const _ of tts.synthesize('Again.', signal));
    t.is(started().length, 2);

    // A prepared process nobody used ends with dispose().
    tts.prepare();
    await until(() => started().length === 3, 'the second prepared process to start');
    const spare = started()[2]!;
    tts.dispose();
    await until(() => !alive(spare), 'the unused process to end');
    t.pass();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a prepared espeak-ng that cannot start is no error until speech is asked for, then the usual one', async (t) => {
  const tts = new EspeakTts({ command: '/nonexistent/espeak-ng' });
  tts.prepare();
  await new Promise((r) => setImmediate(r));
  const err = await t.throwsAsync(async () => {
    for await (const _ of tts.synthesize('Hello.', new AbortController().signal));
  });
  t.regex(err?.message ?? '', /^Cannot run \/nonexistent\/espeak-ng for speech output: .*ENOENT/);
});
