import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { assembleShippedWake, assemblyMissing } from '../../models/wake-shipped/assemble.js';
import { pullShippedWake } from '../../models/wake-shipped/install.js';
import {
  defaultKeywordName,
  REPO_KEYWORDS_DIR,
  readKeyword,
} from '../../models/wake-shipped/keyword-source.js';
import { SYSTEM_WAKE_DIR } from '../../models/wake-shipped/locate.js';
import { runCli } from '../helpers/run-cli.js';

// `mnn-edge models pull wake`: the packaged copy into the store, assembled from the checkout where there is none,
// and one line saying what would provide it where neither works.

const work = mkdtempSync(join(tmpdir(), 'wake-pull-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));

const name = defaultKeywordName(REPO_KEYWORDS_DIR);
const version = readKeyword(REPO_KEYWORDS_DIR, name).version;
const packaged = join(work, 'packaged');
let skip = assemblyMissing();
test.before(async (t) => {
  if (skip) return;
  t.timeout(5 * 60_000); // a machine without the feature models cached fetches them once
  try {
    await assembleShippedWake({ keywordsDir: REPO_KEYWORDS_DIR, outDir: packaged });
  } catch (err) {
    skip = (err as Error).message;
  }
});

/** `mnn-edge models ...args` with this test's HOME. */
function cli(args: string[], env: NodeJS.ProcessEnv) {
  return runCli({ env: { HOME: work, ...env } }, 'models', ...args);
}

function skipped(t: { log: (m: string) => void; pass: () => void }): boolean {
  const why = skip ?? (existsSync(SYSTEM_WAKE_DIR) ? `${SYSTEM_WAKE_DIR} exists on this machine` : undefined);
  if (why === undefined) return false;
  t.log(`wake-shipped-pull: skipped: ${why}`);
  t.pass();
  return true;
}

test('pull wake installs the packaged copy once; again, it says it is there', async (t) => {
  if (skipped(t)) return;
  const dataDir = mkdtempSync(join(work, 'data-'));
  const env = { MNN_EDGE_WAKE_DIR: packaged, MNN_EDGE_CACHE: join(work, 'no-cache') };
  const first = await cli(['pull', 'wake', '--data-dir', dataDir], env);
  t.is(first.code, 0, first.err);
  t.is(first.out, `installed wake-${name}@${version} (wake word ${name}, from ${join(packaged, name)})\n`);
  const again = await cli(['pull', 'wake', '--data-dir', dataDir, '--json'], env);
  t.deepEqual(JSON.parse(again.out), {
    model: `wake-${name}@${version}`,
    keyword: name,
    status: 'present',
    from: join(packaged, name),
  });
  const ls = await cli(['ls', '--data-dir', dataDir], env);
  t.regex(ls.out, new RegExp(`wake-${name} +${version.replace(/\./g, '\\.')} +wake `));
});

test('on a checkout without a packaged copy, pull wake assembles the keyword into the cache', async (t) => {
  if (skipped(t)) return;
  // The feature models from the machine's cache, so that nothing is fetched again.
  const cache = join(work, 'cache');
  mkdirSync(join(cache, 'wake'), { recursive: true });
  for (const f of ['melspectrogram.mnn', 'embedding_model.mnn'])
    copyFileSync(join(packaged, name, f), join(cache, 'wake', f));
  const dataDir = mkdtempSync(join(work, 'data-'));
  const r = await cli(['pull', 'wake', '--data-dir', dataDir], { MNN_EDGE_CACHE: cache });
  t.is(r.code, 0, r.err);
  t.is(
    r.out,
    `installed wake-${name}@${version} (wake word ${name}, from ${join(cache, 'wake', 'shipped', name)})\n`,
  );
  t.regex(r.err, /^assembling /);
});

test('where neither a packaged copy nor MNNConvert is, the line says what would provide the keyword', async (t) => {
  if (existsSync(SYSTEM_WAKE_DIR)) return void t.pass();
  const env = { MNN_CONVERT: join(work, 'none', 'MNNConvert'), MNN_EDGE_CACHE: join(work, 'empty-cache') };
  const store = {} as Parameters<typeof pullShippedWake>[0]; // never reached: both refuse before the store
  await t.throwsAsync(pullShippedWake(store, { env }), {
    message: new RegExp(
      `^Cannot install the wake word: no packaged copy in ${SYSTEM_WAKE_DIR}, .*, and MNNConvert not found at .* from this checkout$`,
    ),
  });
  await t.throwsAsync(pullShippedWake(store, { env, keywordsDir: join(work, 'no-checkout') }), {
    message:
      /^Cannot install the wake word: no packaged copy in .*; install the mnn-edge-wake package \(or the image's\), or run this from a git checkout with MNNConvert$/,
  });
  await t.throwsAsync(pullShippedWake(store, { env, name: 'alexa' }), {
    message: /^Cannot install wake word alexa: this checkout ships /,
  });
});
