import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  type GpuCacheKey,
  GpuCacheStore,
  gpuCacheDir,
  MNN_CACHE_FILE,
} from '../../agent/runtime/engine/gpu-cache.js';
import { createLogger } from '../../lib/log.js';
import { gpuCacheBytes } from '../../models/store/gpu-cache-layout.js';

function setup() {
  const dataDir = mkdtempSync(join(tmpdir(), 'gpu-cache-'));
  const lines: Array<{ level: string; msg: string; reason?: string }> = [];
  const log = createLogger({ write: (l) => lines.push(JSON.parse(l)) });
  return {
    dataDir,
    lines,
    store: new GpuCacheStore(dataDir, log),
    done: () => rmSync(dataDir, { recursive: true, force: true }),
  };
}

const key = (over: Partial<GpuCacheKey> = {}): GpuCacheKey => ({
  modelId: 'qwen3-0.6b',
  version: '1.0.0',
  variantId: 'int4',
  backend: 'vulkan',
  mnnVersion: '3.6.1',
  ...over,
});

test('one directory per (model version, variant, backend, MNN version): two models never share a file', (t) => {
  const { dataDir, store, done } = setup();
  const a = store.prepare(key());
  const b = store.prepare(key({ modelId: 'qwen3-1.7b' }));
  const c = store.prepare(key({ variantId: 'int8' }));
  t.is(new Set([a.dir, b.dir, c.dir]).size, 3);
  t.is(a.dir, join(dataDir, 'gpu-cache/qwen3-0.6b/1.0.0/int4/vulkan/mnn-3.6.1'));
  t.is(a.state, 'cold');
  done();
});

test('a sealed cache is warm; a truncated one is ignored, removed and logged once', (t) => {
  const { store, lines, done } = setup();
  const dir = store.prepare(key()).dir;
  writeFileSync(join(dir, MNN_CACHE_FILE), Buffer.alloc(4096, 7));
  store.seal(key());
  t.is(store.prepare(key()).state, 'warm');
  truncateSync(join(dir, MNN_CACHE_FILE), 1000);
  const after = store.prepare(key());
  t.is(after.state, 'cold');
  t.regex(after.note!, /ignored and rebuilt: 1000 bytes, sealed at 4096 \(truncated or overwritten\)/);
  // MNN writes a new file at the next unload; if that one is also broken, the warning is not repeated.
  writeFileSync(join(dir, MNN_CACHE_FILE), 'garbage');
  store.prepare(key());
  t.is(lines.filter((l) => l.msg === 'GPU cache dropped').length, 1);
  done();
});

test('a cache whose content changed under its seal is dropped as corrupt', (t) => {
  const { store, done } = setup();
  const dir = store.prepare(key()).dir;
  writeFileSync(join(dir, MNN_CACHE_FILE), Buffer.alloc(64, 1));
  store.seal(key());
  writeFileSync(join(dir, MNN_CACHE_FILE), Buffer.alloc(64, 2));
  const p = store.prepare(key());
  t.is(p.state, 'cold');
  t.regex(p.note!, /content differs from its seal \(corrupt\)/);
  done();
});

test('a new MNN version invalidates the caches of the old one', (t) => {
  const { dataDir, store, done } = setup();
  const old = store.prepare(key({ mnnVersion: '3.5.0' })).dir;
  writeFileSync(join(old, MNN_CACHE_FILE), 'x'.repeat(100));
  t.is(gpuCacheBytes(dataDir, { id: 'qwen3-0.6b', version: '1.0.0' }), 100);
  store.prepare(key({ mnnVersion: '3.6.1' }));
  t.is(gpuCacheBytes(dataDir, { id: 'qwen3-0.6b', version: '1.0.0' }), 0);
  done();
});

test('an unwritable cache directory: runs without a cache and says so', (t) => {
  const { dataDir, store, lines, done } = setup();
  // Root ignores permission bits, so block the directory with a file where it must be created.
  writeFileSync(join(dataDir, 'gpu-cache'), 'not a directory');
  const p = store.prepare(key());
  t.is(p.state, 'disabled');
  t.regex(p.note!, /is not writable .*runs on vulkan without a kernel cache/);
  store.prepare(key());
  t.is(lines.filter((l) => l.msg === 'GPU cache disabled').length, 1);
  t.is(gpuCacheDir(dataDir, key()), p.dir);
  done();
});
