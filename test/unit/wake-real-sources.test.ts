// The real-audio sources of the wake word (engine/tools/wake-keyword/real-sources.ts): the list's own rules
// (one split per source, a digest kept for each, no non-commercial data), and reading a cache by split with the
// minimums, on a cache made here from the media fixtures.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { trainingSources } from '../../engine/tools/wake-keyword/keep-keyword.js';
import { realClips, splitSummary } from '../../engine/tools/wake-keyword/real-audio.js';
import { augmentedTake, RealBackground, speechEnd } from '../../engine/tools/wake-keyword/real-negatives.js';
import {
  expectedDigests,
  REAL_SOURCES,
  type RealIndex,
} from '../../engine/tools/wake-keyword/real-sources.js';
import { rng } from '../../engine/tools/wake-keyword/speech.js';
import { mediaFixturesDir } from '../helpers/paths.js';

test('every source has one id, one split, a licence, and Debian sources a digest in real-sources.sha256', (t) => {
  const ids = REAL_SOURCES.map((s) => s.id);
  t.is(new Set(ids).size, ids.length);
  const digests = expectedDigests();
  for (const s of REAL_SOURCES) {
    t.true(s.licence.length > 0, s.id);
    t.true(['train', 'eval'].includes(s.split), s.id);
    if (s.kind === 'deb') t.regex(digests.get(s.id) ?? '', /^[0-9a-f]{64}$/, `${s.id} has no sha256`);
    else t.regex(s.commit, /^[0-9a-f]{40}$/);
  }
});

test('no non-commercial source is taken (heysavant is CC BY-NC-SA), and held-out music is not in training', (t) => {
  for (const s of REAL_SOURCES) {
    if (s.kind === 'git')
      t.false(
        s.paths.some((p) => p.includes('heysavant')),
        s.id,
      );
    t.notRegex(s.licence, /\bNC\b|NonCommercial/i, s.id);
  }
  const packages = (split: string) =>
    new Set(REAL_SOURCES.flatMap((s) => (s.kind === 'deb' && s.split === split ? [s.package] : [])));
  const train = packages('train');
  for (const p of packages('eval')) t.false(train.has(p), p);
});

function fakeCache(): string {
  const cache = mkdtempSync(join(tmpdir(), 'wake-audio-'));
  const put = (id: string, index: Omit<RealIndex, 'id' | 'sha256'>, files: string[]) => {
    const dir = join(cache, 'audio', id);
    mkdirSync(dir, { recursive: true });
    for (const f of files) copyFileSync(join(mediaFixturesDir, f), join(dir, f));
    writeFileSync(join(dir, 'index.json'), JSON.stringify({ id, sha256: 'x', ...index }));
  };
  put(
    'ufoai-music',
    {
      role: 'music',
      licence: 'GPL-2+',
      seconds: 7 * 3600,
      files: [{ path: 'vad-segments-16k.wav', seconds: 7 * 3600, split: 'eval' }],
    },
    ['vad-segments-16k.wav'],
  );
  put(
    'tuxpaint-stamps',
    {
      role: 'speech',
      licence: 'GPL-2+',
      seconds: 5 * 3600,
      files: [{ path: 'speech-hello-48k-stereo.wav', seconds: 5 * 3600, split: 'train' }],
    },
    ['speech-hello-48k-stereo.wav'],
  );
  put(
    'precise-computer',
    {
      role: 'keyword',
      phrase: 'computer',
      licence: 'public domain',
      seconds: 4,
      files: [
        { path: 'speech-hello-16k.wav', seconds: 2, speaker: 'krisgesling', split: 'train' },
        { path: 'speech-hello-16k.wav', seconds: 2, speaker: 'el-tocino', split: 'eval' },
      ],
    },
    ['speech-hello-16k.wav'],
  );
  return cache;
}

test('realClips reads one split, names the sources not in the cache, and splitSummary checks the minimums', (t) => {
  const cache = fakeCache();
  try {
    const evalClips = realClips('eval', {}, cache);
    t.deepEqual(
      evalClips.clips.map((c) => [c.source, c.speaker]),
      [
        ['ufoai-music', undefined],
        ['precise-computer', 'el-tocino'],
      ],
    );
    t.true(evalClips.missing.includes('wesnoth-music'));
    t.false(
      evalClips.missing.includes('tuxpaint-stamps'),
      'a training source is not missing from evaluation',
    );
    const train = realClips('train', { roles: ['keyword'], phrase: 'computer' }, cache);
    t.deepEqual(
      train.clips.map((c) => c.speaker),
      ['krisgesling'],
    );
    const summary = splitSummary(cache);
    t.false(summary.meetsMinimums, '1 held-out "computer" clip is under the 100 needed');
    t.true(summary.lines.some((l) => /background 7\.00 h .*minimum 8 h\): SHORT/.test(l)));
    t.true(summary.lines.some((l) => /background 5\.00 h .*minimum 4 h\): ok/.test(l)));
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});

test('a real background window has the length and level asked for, from a real file of any rate', async (t) => {
  const cache = fakeCache();
  try {
    const bed = new RealBackground(realClips('train', {}, cache).clips, 1);
    const w = await bed.window(1.5, 0.05);
    t.is(w.audio.length, 24000);
    const rms = Math.sqrt(w.audio.reduce((s, x) => s + x * x, 0) / w.audio.length);
    t.true(Math.abs(rms - 0.05) < 0.005, `rms ${rms}`);
    t.is(w.label, 'real tuxpaint-stamps');
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});

test('speechEnd finds the end of the last loud stretch of a clip', (t) => {
  const audio = new Float32Array(32000);
  for (let i = 8000; i < 20000; i++) audio[i] = Math.sin(i / 5) * 0.3;
  for (let i = 20000; i < 32000; i++) audio[i] = (i % 2 ? 1 : -1) * 0.0001;
  t.is(speechEnd(audio), 20000);
});

test('augmentedTake replays a real clip at another speed and level, its keyword end moved with it', async (t) => {
  // A real clip as realPositives gives it: 1.5 s of digital silence, 0.6 s of "speech", 0.4 s of room sound.
  const lead = 24000;
  const audio = new Float32Array(lead + 16000);
  for (let i = 0; i < 9600; i++) audio[lead + i] = Math.sin(i / 5) * 0.3;
  for (let i = lead + 9600; i < audio.length; i++) audio[i] = (i % 2 ? 1 : -1) * 0.0001;
  const clip = { audio, keywordEnd: lead + 9600, label: 'real test' };
  const r = rng(7);
  for (let n = 0; n < 20; n++) {
    const take = await augmentedTake(clip, r);
    const end = take.keywordEnd!;
    // The 0.4 s after the word tell the speed (0.85–1.15: 0.35–0.47 s, ± one 10 ms block of speechEnd)…
    const speed = 6400 / (take.audio.length - end);
    t.true(speed > 0.83 && speed < 1.17, `speed ${speed}`);
    // …the recording (1 s at speed 1) then starts 1.2–2 s in, and its word ends 0.6 s / speed later.
    const lead = take.audio.length - 16000 / speed;
    t.true(lead > 1.2 * 16000 - 400 && lead < 2 * 16000 + 400, `lead ${lead}`);
    t.true(Math.abs(end - lead - 9600 / speed) < 400, `word ${end - lead}`);
    const word = take.audio.subarray(Math.round(lead), end);
    const rms = Math.sqrt(word.reduce((s, x) => s + x * x, 0) / word.length);
    // -30…-10 dBFS, give or take the noise under it.
    t.true(rms > 0.028 && rms < 0.35, `rms ${rms}`);
  }
});

test('a kept keyword names the training split it was made from, never an evaluation source', (t) => {
  const evalIds = new Set(REAL_SOURCES.filter((s) => s.split === 'eval').map((s) => s.id));
  const computer = trainingSources('computer');
  const hey = trainingSources('hey computer');
  for (const s of [...computer, ...hey]) {
    t.false(evalIds.has(s.id), s.id);
    t.regex(s.sha256 ?? '', /^[0-9a-f]{64}$/, s.id);
  }
  t.true(computer.some((s) => s.id === 'precise-computer'));
  t.false(hey.some((s) => s.id.startsWith('precise-')));
  t.true(hey.some((s) => s.id === '0ad-audio') && hey.some((s) => s.id === 'mimic3-samples'));
});
