// Benchmarks load the built agent by naming its source (bench/lib/dist.ts); these hold the names to the tree, so
// a source that moves breaks here, not on a fresh clone's `npm run bench`. The build-and-import half runs in
// `npm run check:generated` (scripts/check-bench-entries.ts), which CI runs before the tests.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { builtPath } from '../../bench/lib/dist.js';
import { checkNames, scanBench } from '../../scripts/check-bench-entries.js';
import { staleOutputs } from '../../scripts/stale-dist.js';

function tempDir(t: ExecutionContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('every built file a benchmark loads is named by an existing, compiled source', (t) => {
  const scan = scanBench();
  t.deepEqual(checkNames(scan), []);
  const sources = scan.entries.map((e) => e.source);
  // The engine's public surface and the CLI: what engine, idle, startup, metrics and soak load.
  t.true(sources.includes('engine/index.ts'), sources.join(', '));
  t.true(sources.includes('agent/cli/mnn-edge.ts'), sources.join(', '));
});

test('a benchmark that spells a dist/ path by hand, or names a source that is gone, is reported', (t) => {
  const bench = tempDir(t, 'mnn-edge-bench-scan-');
  writeFileSync(
    join(bench, 'old.bench.ts'),
    [
      "const m = await import(join(repoRoot, 'dist', 'engine', 'src', 'index.js'));",
      "const gone = builtUrl('engine/src/index.ts');",
      "const page = join(repo, 'dashboard', 'dist'); // the dashboard's own build is allowed",
      "console.log('(dist/ not built: run npm run build)');",
    ].join('\n'),
  );
  const scan = scanBench(bench);
  const problems = checkNames(scan);
  t.is(problems.length, 2, problems.join('\n'));
  t.regex(problems[0]!, /old\.bench\.ts:1: .*name the source through builtPath\(\)\/builtUrl\(\)/);
  t.regex(problems[1]!, /engine\/src\/index\.ts does not exist/);
});

test('builtPath maps a source to its output and refuses a source that does not exist', (t) => {
  t.is(builtPath('engine/index.ts', '/d'), '/d/engine/index.js');
  t.throws(() => builtPath('engine/src/index.ts'), { message: /engine\/src\/index\.ts does not exist/ });
  t.throws(() => builtPath('../etc/passwd.ts'), { message: /relative to the repository/ });
});

test('staleOutputs lists what no source produces, but not the bundle chunks', (t) => {
  const root = tempDir(t, 'mnn-edge-stale-');
  const dist = join(root, 'dist');
  mkdirSync(join(root, 'engine', 'src'), { recursive: true });
  mkdirSync(join(dist, 'engine', 'src'), { recursive: true });
  mkdirSync(join(dist, 'agent', 'cli'), { recursive: true });
  writeFileSync(join(root, 'engine', 'index.ts'), '');
  for (const f of [
    'engine/index.js',
    'engine/index.js.map',
    'engine/src/index.js',
    'agent/cli/chunk-2NGQFTTS.js',
  ])
    writeFileSync(join(dist, f), '');
  t.deepEqual(staleOutputs(dist, root), ['engine/src/index.js']);
});
