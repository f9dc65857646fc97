// `npm run bench [-- name ...]`: runs bench/<name>.bench.ts one after another, each in its own process so that
// one benchmark's heap and threads do not colour the next. Each prints its own ratios against a baseline it
// measures in the same run and records its figures (stats.ts check()); the run ends with one table of every
// figure, its target and PASS/MISS, then the same as JSON (one line, for the fleet's bench history).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Figure, fmt, RESULTS_ENV } from './lib/stats.js';

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.replace(/\.bench\.ts$/, ''))
  .sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !available.includes(w));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; available: ${available.join(', ')}`);
  process.exit(2);
}

const scratch = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-run-'));
const resultsFile = join(scratch, 'figures.jsonl');
const outcomes: Array<{ bench: string; status: 'ran' | 'failed' | 'skipped'; seconds: number }> = [];
const partSkips: string[] = [];
for (const name of wanted.length > 0 ? wanted : available) {
  console.log(`\n=== bench/${name} ===`);
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--import=tsx', join(here, `${name}.bench.ts`)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    // The soak runs 30 minutes on its own (`npm run bench -- soak`) and 5 in the full run, unless SOAK_MINUTES says.
    env: {
      ...(wanted.length === 0 && name === 'soak' ? { SOAK_MINUTES: '5' } : {}),
      ...process.env,
      [RESULTS_ENV]: resultsFile,
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  const out = r.stdout?.toString() ?? '';
  process.stdout.write(out);
  const seconds = (performance.now() - t0) / 1000;
  // `SKIP bench/NAME:` skips the whole benchmark; other SKIP lines skip one part (a model, a backend).
  const status = r.status !== 0 ? 'failed' : out.includes(`SKIP bench/${name}:`) ? 'skipped' : 'ran';
  for (const part of out.matchAll(/^SKIP (?!bench\/)(.*)$/gm)) partSkips.push(`${name}: ${part[1]}`);
  outcomes.push({ bench: name, status, seconds });
}

let figures: Figure[] = [];
try {
  figures = readFileSync(resultsFile, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Figure);
} catch {
  // no benchmark recorded a figure
}
rmSync(scratch, { recursive: true, force: true });

/** '1.2x' for ratios, '3 ms' for the rest. */
const unitSuffix = (unit: string) => (unit === 'x' ? 'x' : unit ? ` ${unit}` : '');
const rows = figures.map((f) => [
  f.bench,
  f.figure,
  fmt(f.value, Math.abs(f.value) >= 100 ? 0 : 2) + unitSuffix(f.unit),
  f.target + unitSuffix(f.unit),
  f.pass ? 'PASS' : 'MISS',
]);
for (const o of outcomes) {
  if (o.status !== 'ran') rows.push([o.bench, '(whole benchmark)', '', '', o.status.toUpperCase()]);
}
const header = ['bench', 'figure', 'value', 'target', ''];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
console.log('\n=== summary ===');
console.log(line(header));
console.log(line(widths.map((w) => '-'.repeat(w))));
for (const r of rows) console.log(line(r));
const missed = figures.filter((f) => !f.pass).length;
const failed = outcomes.filter((o) => o.status === 'failed').length;
console.log(`${figures.length - missed} PASS, ${missed} MISS, ${failed} failed to run`);
for (const p of partSkips) console.log(`skipped part: ${p}`);
const total = outcomes.reduce((a, o) => a + o.seconds, 0);
console.log(`${outcomes.length} benchmarks in ${fmt(total / 60, 1)} min`);
console.log(
  JSON.stringify({
    at: new Date().toISOString(),
    figures,
    benchmarks: outcomes.map((o) => ({ ...o, seconds: Number(o.seconds.toFixed(1)) })),
    skippedParts: partSkips,
  }),
);
process.exit(failed > 0 ? 1 : 0);
