import test from 'ava';
import { DEV_SOURCES, withoutDev } from '../../engine/tools/wake-keyword/dev-split.js';
import { DEFAULT_MINING } from '../../engine/tools/wake-keyword/hard-negatives.js';
import { trainingSources } from '../../engine/tools/wake-keyword/keep-keyword.js';
import { parseKeywordArgs } from '../../engine/tools/wake-keyword/make-keyword-args.js';
import type { RealClip } from '../../engine/tools/wake-keyword/real-audio.js';
import { REAL_SOURCES } from '../../engine/tools/wake-keyword/real-sources.js';

test('the development sources are whole training-split sources of background audio, never evaluation ones', (t) => {
  for (const id of DEV_SOURCES) {
    const s = REAL_SOURCES.find((x) => x.id === id);
    t.truthy(s, `${id} is a listed source`);
    t.is(s!.split, 'train', `${id} is in the training split`);
    t.not(s!.role, 'keyword', `${id} is background, not the keyword`);
  }
  // Both kinds of background, so the rule meets speech and music.
  const roles = new Set(DEV_SOURCES.map((id) => REAL_SOURCES.find((x) => x.id === id)!.role));
  t.true(roles.has('speech') && roles.has('music'));
  // Training keeps most of the split's speech: Tux Paint and mimic3 stay.
  t.false(DEV_SOURCES.includes('tuxpaint-stamps'));
  t.false(DEV_SOURCES.includes('mimic3-samples'));
});

test('recipe 8 trains without the development sources', (t) => {
  const clip = (source: string): RealClip => ({
    path: `/x/${source}/a.ogg`,
    source,
    role: 'speech',
    seconds: 1,
  });
  const kept = withoutDev([
    clip('klettres'),
    clip('tuxpaint-stamps'),
    clip('flare-audio'),
    clip('0ad-audio'),
  ]);
  t.deepEqual(
    kept.map((c) => c.source),
    ['tuxpaint-stamps', '0ad-audio'],
  );
});

test('make-keyword: --dev and --mine-with DIR turn recipe 8 on; a missing value is named', (t) => {
  const { out, options } = parseKeywordArgs(['/tmp/k', '--dev', '--mine-with', '/tmp/r7', '--seed', '2028']);
  t.is(out, '/tmp/k');
  t.true(options.devSplit);
  t.deepEqual(options.mining, { ...DEFAULT_MINING, fromDir: '/tmp/r7' });
  t.is(options.seed, 2028);
  t.throws(() => parseKeywordArgs(['/tmp/k', '--mine-with']), { message: '--mine-with needs a value' });
  // Recipe 7's command line stays recipe 7: neither step is on by default.
  const r7 = parseKeywordArgs(['/tmp/k', '--real-minutes', '60', '--real-speech-share', '0.6']);
  t.is(r7.options.devSplit, undefined);
  t.is(r7.options.mining, undefined);
});

test("a recipe-8 keyword records its development sources as the rule's, not as trained on", (t) => {
  const real = trainingSources('hey computer', DEV_SOURCES);
  for (const id of DEV_SOURCES) t.regex(real.find((s) => s.id === id)!.files, /^none trained/);
  t.is(real.find((s) => s.id === 'tuxpaint-stamps')!.files, 'all (training split)');
});
