// Bundles the compiled CLI (dist/agent/cli/mnn-edge.js, what /usr/bin/mnn-edge and the systemd unit run) into
// that one file, in place, after tsc. Node's ESM loader resolves, reads and links every file of a module graph
// separately; for the few dozen files on the path to READY that was most of the daemon's start (bench/startup),
// and the modules loaded after READY cost memory per module record too (bench/idle). The rest of dist/ stays as
// tsc wrote it: the engine host (dist/engine/src/host/host-main.js) runs as its own process from there, and the
// benchmarks import single modules.
// The production dependencies stay external: better-sqlite3 and the engine addon are native, and the others are
// CommonJS that Node loads (lazily, after READY) as fast as a bundle would. The packages package.json lists in
// `bundledIntoAgent` are devDependencies bundled in instead: the MCP SDK would install 90 packages, 29 MB
// (express, hono, ajv…), on every board for the ~700 KB of it the agent uses. Any other package the agent
// imports is an error here: it must be a dependency or be bundled on purpose.
// Usage: node scripts/bundle-agent.mjs [DIST_DIR]  (default ./dist; the stage and the Yocto recipe pass theirs)
import { chmodSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadEsbuild } from './esbuild.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const external = new Set(Object.keys(manifest.dependencies ?? {}));
const bundled = new Set(manifest.bundledIntoAgent ?? []);

/** `@scope/name/sub/path` → `@scope/name`; `name/sub` → `name`. */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Production dependencies external, `bundledIntoAgent` bundled, any other package refused by name. */
const packagePolicy = {
  name: 'package-policy',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:') || builtinModules.includes(packageOf(args.path)))
        return { external: true };
      const name = packageOf(args.path);
      if (external.has(name)) return { external: true };
      // Inside a bundled package its own dependencies are bundled along with it.
      if (bundled.has(name) || args.importer.includes('/node_modules/')) return undefined;
      return {
        errors: [
          {
            text: `${args.path}: the agent imports a package that is neither a dependency nor in bundledIntoAgent`,
          },
        ],
      };
    });
  },
};
const dist = resolve(process.argv[2] ?? join(repo, 'dist'));
const entry = join(dist, 'agent', 'cli', 'mnn-edge.js');
const { build } = await loadEsbuild();
const outdir = join(dist, 'agent', 'cli');
const stage = `${outdir}.bundle`;
rmSync(stage, { recursive: true, force: true });
// Code splitting keeps each `await import()` a real one: what the agent loads after READY (the modules and
// their npm packages) stays in chunks loaded then. Every chunk sits beside the entry, so import.meta.url has
// the same directory in all of them (the package-root lookups rely on it).
await build({
  entryPoints: [entry],
  outdir: stage,
  entryNames: '[name]',
  chunkNames: 'chunk-[hash]',
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  plugins: [packagePolicy],
  // A dist outside the checkout (the stage, the Debian package) has only the production dependencies beside it:
  // the bundled packages come from the checkout's node_modules.
  nodePaths: [join(repo, 'node_modules')],
  // Stack traces and logs keep our names: only whitespace goes.
  minifyWhitespace: true,
  legalComments: 'none',
  logLevel: 'warning',
});
// One character above U+00FF anywhere in a chunk makes V8 hold that chunk's whole source as UTF-16, twice the
// memory for as long as the daemon runs (bench/idle). esbuild escapes strings but not regular expressions.
for (const f of readdirSync(stage)) {
  if (!f.endsWith('.js')) continue;
  const text = readFileSync(join(stage, f), 'utf8');
  const at = text.search(/[\u0100-\u{10ffff}]/u);
  if (at >= 0) {
    const line = text.slice(Math.max(0, at - 60), at + 20);
    console.error(`bundle-agent: ${f} holds a character above U+00FF (write it as an escape): …${line}…`);
    process.exit(1);
  }
}
const mode = statSync(entry).mode;
for (const f of readdirSync(outdir)) if (f.startsWith('chunk-')) rmSync(join(outdir, f));
let bytes = 0;
for (const f of readdirSync(stage)) {
  renameSync(join(stage, f), join(outdir, f));
  bytes += statSync(join(outdir, f)).size;
}
rmSync(stage, { recursive: true, force: true });
// The bin is executed directly (/usr/bin/mnn-edge links to it): keep tsc's mode.
chmodSync(entry, mode);
console.log(`bundled ${entry} and its chunks (${Math.round(bytes / 1024)} KiB)`);
