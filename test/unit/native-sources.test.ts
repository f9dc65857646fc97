import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { sourcesMismatch } from '../../engine/src/loader.js';
import { nativeSourcesDigest } from '../../engine/src/native-sources.js';
import { repoRoot } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-native-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

test('the digest covers every .cc and .h by name and content, and nothing else', (t) => {
  const a = tree({ 'llm.cc': 'int a;', 'llm.h': '#pragma once', README: 'not a source' });
  const b = tree({ 'llm.cc': 'int a;', 'llm.h': '#pragma once' });
  const c = tree({ 'llm.cc': 'int b;', 'llm.h': '#pragma once' });
  const d = tree({ 'llm2.cc': 'int a;', 'llm.h': '#pragma once' });
  t.teardown(() => {
    for (const dir of [a, b, c, d]) rmSync(dir, { recursive: true, force: true });
  });
  t.is(nativeSourcesDigest(a), nativeSourcesDigest(b));
  t.not(nativeSourcesDigest(b), nativeSourcesDigest(c));
  t.not(nativeSourcesDigest(b), nativeSourcesDigest(d));
  t.is(nativeSourcesDigest(join(a, 'missing')), undefined, 'sources not shipped: nothing to compare');
});

test('an addon from other sources is refused with what to do; a matching, unknown or unshipped one is not', (t) => {
  const dir = tree({ 'addon.cc': 'int x;' });
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const here = nativeSourcesDigest(dir)!;
  t.is(sourcesMismatch('/x/mnn_edge_engine.node', here, dir), undefined);
  t.is(
    sourcesMismatch('/x/mnn_edge_engine.node', undefined, dir),
    undefined,
    'built before the digest existed',
  );
  t.is(sourcesMismatch('/x/mnn_edge_engine.node', 'f'.repeat(64), join(dir, 'none')), undefined);
  t.is(
    sourcesMismatch('/x/mnn_edge_engine.node', 'f'.repeat(64), dir),
    `the engine addon at /x/mnn_edge_engine.node was built from other native sources than ${dir} ` +
      `(addon ffffffffffff, sources ${here.slice(0, 12)}): rebuild it with npm run build:engine`,
  );
});

const cmake = spawnSync('cmake', ['--version']).status === 0;
if (!cmake) {
  skipWithLine(
    'SKIP native-sources.cmake digest: no cmake on PATH (the addon build needs it; the JS side is tested above)',
  );
} else {
  test("the addon build's digest (native-sources.cmake) equals the loader's, on the real engine/native", (t) => {
    const out = join(mkdtempSync(join(tmpdir(), 'mnn-edge-digest-')), 'native_sources.h');
    const native = join(repoRoot, 'engine', 'native');
    execFileSync('cmake', [
      `-DSRC_DIR=${native}`,
      `-DOUT=${out}`,
      '-P',
      join(repoRoot, 'engine', 'scripts', 'native-sources.cmake'),
    ]);
    const m = /MNN_EDGE_NATIVE_SOURCES "([0-9a-f]{64})"/.exec(readFileSync(out, 'utf8'));
    t.is(m?.[1], nativeSourcesDigest(native));
  });
}
