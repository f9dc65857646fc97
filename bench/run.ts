// `npm run bench [-- name ...]`: runs bench/<name>.bench.ts one after another, each in its own process so that
// one benchmark's heap and threads do not colour the next. Each prints its own ratios against a baseline it
// measures in the same run.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
let failed = 0;
for (const name of wanted.length > 0 ? wanted : available) {
  console.log(`\n=== bench/${name} ===`);
  const r = spawnSync(process.execPath, ['--import=tsx', join(here, `${name}.bench.ts`)], {
    stdio: 'inherit',
  });
  if (r.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
