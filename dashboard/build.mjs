// Builds the dashboard into dashboard/dist: one ESM bundle for the page, one for the audio worklet, the CSS
// and index.html. No CDN, no source maps shipped; fails when the gzipped total exceeds the budget, so the
// appliance image never grows a slow dashboard unnoticed.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { loadEsbuild } from '../scripts/esbuild.mjs';

// MNN_EDGE_ESBUILD=wasm forces esbuild-wasm (cross builds); `--out DIR` builds somewhere other than dashboard/dist.
const { build } = await loadEsbuild();

const here = dirname(fileURLToPath(import.meta.url));
const src = join(here, 'src');
const outFlag = process.argv.indexOf('--out');
const out = outFlag === -1 ? join(here, 'dist') : resolve(process.argv[outFlag + 1]);
const BUDGET_GZIP_BYTES = 300 * 1024;

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const common = {
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome100', 'firefox100', 'safari15'],
  legalComments: 'none',
  logLevel: 'warning',
};
await build({ ...common, entryPoints: [join(src, 'main.ts')], outfile: join(out, 'assets', 'app.js') });
await build({
  ...common,
  entryPoints: [join(src, 'voice', 'capture-worklet.ts')],
  outfile: join(out, 'assets', 'capture-worklet.js'),
});
await build({
  ...common,
  entryPoints: [join(src, 'styles.css')],
  outfile: join(out, 'assets', 'app.css'),
  loader: { '.css': 'css' },
});
copyFileSync(join(src, 'index.html'), join(out, 'index.html'));

function files(dir) {
  return readdirSync(dir).flatMap((n) =>
    statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)],
  );
}
let total = 0;
for (const f of files(out)) {
  const gz = gzipSync(readFileSync(f), { level: 9 }).length;
  total += gz;
  console.log(
    `${relative(here, f).padEnd(36)} ${String(statSync(f).size).padStart(8)} B  ${String(gz).padStart(7)} B gzip`,
  );
}
console.log(`total ${total} B gzipped (budget ${BUDGET_GZIP_BYTES})`);
if (total > BUDGET_GZIP_BYTES) {
  console.error(`dashboard is ${total} B gzipped, over the ${BUDGET_GZIP_BYTES} B budget`);
  process.exit(1);
}
