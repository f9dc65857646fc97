// Short real files kept decoded on disk for the keyword generator (engine/tools/wake-keyword/decoded-cache.ts):
// the second read is the first's samples exactly, and only files of the cache's audio tree are kept.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { decodedPath, decodeKept } from '../../engine/tools/wake-keyword/decoded-cache.js';
import { mediaFixturesDir } from '../helpers/paths.js';

test('a file of the audio tree is decoded once, then read back sample for sample', async (t) => {
  const cache = mkdtempSync(join(tmpdir(), 'wake-decoded-'));
  try {
    const file = join(cache, 'audio', 'some-source', 'words', 'hello.wav');
    mkdirSync(join(cache, 'audio', 'some-source', 'words'), { recursive: true });
    copyFileSync(join(mediaFixturesDir, 'speech-hello-48k-stereo.wav'), file);
    const kept = decodedPath(file, cache)!;
    t.is(kept, join(cache, 'decoded', 'some-source', 'words', 'hello.wav.f32'));
    const first = await decodeKept(file, cache);
    t.true(existsSync(kept));
    rmSync(file); // the second read needs only the decoded copy
    const second = await decodeKept(file, cache);
    t.true(first.length > 16000);
    t.deepEqual(second, first);
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});

test('a file outside the audio tree is decoded but not kept', async (t) => {
  const cache = mkdtempSync(join(tmpdir(), 'wake-decoded-'));
  try {
    const file = join(mediaFixturesDir, 'speech-hello-16k.wav');
    t.is(decodedPath(file, cache), undefined);
    t.true((await decodeKept(file, cache)).length > 0);
    t.false(existsSync(join(cache, 'decoded')));
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});
