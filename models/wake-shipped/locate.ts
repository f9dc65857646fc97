// Where a board finds the assembled keyword (assemble.ts's tree): the Debian package and the Yocto image install
// it under /usr/share/mnn-edge/wake; on a board run from a git checkout, `mnn-edge models pull wake` assembles it
// into the cache. The first of these that holds default.json and the keyword's package wins.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { WAKE_META_FILE } from '../wake-package.js';
import type { ShippedModelRef } from './assemble.js';
import { DEFAULT_KEYWORD_FILE } from './keyword-source.js';

export const SYSTEM_WAKE_DIR = '/usr/share/mnn-edge/wake';

/** Where `models pull wake` assembles the keyword on a checkout (beside the feature models' cache). */
export function cachedShippedDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env['MNN_EDGE_CACHE'] ?? join(homedir(), '.cache', 'mnn-edge'), 'wake', 'shipped');
}

/** The places searched, in order: $MNN_EDGE_WAKE_DIR, the packaged copy, the checkout's cache. */
export function shippedWakeDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const explicit = env['MNN_EDGE_WAKE_DIR'];
  return [...(explicit ? [explicit] : []), SYSTEM_WAKE_DIR, cachedShippedDir(env)];
}

export interface ShippedWake extends ShippedModelRef {
  name: string;
  /** The package directory, ready for the store's import. */
  dir: string;
}

function readJsonObject(path: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The keyword `name` (default: the tree's default.json) in one shipped tree, or undefined when it is not there. */
export function shippedWakeIn(root: string, name?: string): ShippedWake | undefined {
  const chosen = name ?? readJsonObject(join(root, DEFAULT_KEYWORD_FILE))?.['keyword'];
  if (typeof chosen !== 'string' || chosen.includes('/') || chosen.startsWith('.')) return undefined;
  const dir = join(root, chosen);
  const meta = readJsonObject(join(dir, WAKE_META_FILE));
  const model = meta?.['model'] as Partial<ShippedModelRef> | undefined;
  if (typeof model?.id !== 'string' || typeof model.version !== 'string') return undefined;
  return { name: chosen, dir, id: model.id, version: model.version };
}

/** The shipped keyword found first along shippedWakeDirs, or undefined. */
export function findShippedWake(
  env: NodeJS.ProcessEnv = process.env,
  name?: string,
): ShippedWake | undefined {
  for (const root of shippedWakeDirs(env)) {
    if (!existsSync(root)) continue;
    const found = shippedWakeIn(root, name);
    if (found) return found;
  }
  return undefined;
}
