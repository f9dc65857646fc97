// The model store's test fixtures: a scratch data dir, the store opened on it, tiny-llm as a manifest and as a
// package's entries, archives written from them, and the empty store's shape. Shared by the models-store tests
// (imports and holds, recovery and locking, refused packages).
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { ExecutionContext } from 'ava';
import { openStore } from '../../agent/store/database.js';
import {
  hashFile,
  type ModelManifest,
  ModelStore,
  type ModelStoreOptions,
  type TarWriteEntry,
  writeTar,
} from '../../models/index.js';
import { modelFixturesDir } from './paths.js';

export const TINY = join(modelFixturesDir, 'tiny-llm');
export const TINY_FILES = [
  'config.json',
  'embeddings_bf16.bin',
  'llm.mnn',
  'llm.mnn.weight',
  'llm_config.json',
  'tokenizer.txt',
];

export function scratch(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'models-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function openAt(dataDir: string, extra: Partial<ModelStoreOptions> = {}) {
  const db = openStore(join(dataDir, 'agent.db'));
  const { store, recovery } = ModelStore.open({ dataDir, db, ...extra });
  return { store, recovery, db };
}

export async function manifestFor(id: string, version: string): Promise<ModelManifest> {
  const files = await Promise.all(
    TINY_FILES.map(async (path) => ({ path, ...(await hashFile(join(TINY, path))) })),
  );
  return {
    schemaVersion: 1,
    id,
    version,
    task: 'llm',
    license: 'Apache-2.0',
    variants: [
      {
        name: 'cpu-fp32',
        requirements: { backend: 'cpu', engineFeatures: ['llm'], minRamBytes: 64 * 1024 * 1024 },
        precision: { weights: 'fp32', activations: 'fp32' },
        files,
        memory: { weightsBytes: 517640, kvCacheBytes: 1048576, contextLength: 2048 },
        configOverrides: { thread_num: 2 },
      },
    ],
  };
}

export function packageEntries(manifest: unknown): TarWriteEntry[] {
  return [
    { path: 'mnn-edge.json', data: Buffer.from(JSON.stringify(manifest)) },
    ...TINY_FILES.map((f) => ({ path: f, data: readFileSync(join(TINY, f)) })),
  ];
}

export async function writeArchive(path: string, entries: TarWriteEntry[], gzip = false): Promise<string> {
  const source = Readable.from(writeTar(entries));
  if (gzip) await pipeline(source, createGzip(), createWriteStream(path));
  else await pipeline(source, createWriteStream(path));
  return path;
}

export function assertStoreEmpty(t: ExecutionContext, dataDir: string, store: ModelStore): void {
  t.deepEqual(store.list(), []);
  t.deepEqual(readdirSync(join(dataDir, 'models')).sort(), ['.lock', '.staging', '.trash']);
  t.deepEqual(readdirSync(join(dataDir, 'models', '.staging')), []);
}
