// `npm run stage -- --destdir DIR [--build]` lays out in DIR exactly what the Yocto recipe installs, from
// the same stage-manifest.txt, so the image's layout can be started and tested on a development machine.
// `npm run stage -- --write-shrinkwrap FILE` writes the npm-shrinkwrap.json the recipe's npmsw fetcher reads.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type LockEntry,
  type PackageLock,
  parseStageManifest,
  type StageManifest,
} from './stage-manifest.js';

export type { PackageLock } from './stage-manifest.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const recipeDir = join(repoRoot, 'yocto', 'meta-mnn-edge', 'recipes-mnn-edge', 'mnn-edge');
export const manifestPath = join(recipeDir, 'files', 'stage-manifest.txt');

export function readLock(root = repoRoot): PackageLock {
  return JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as PackageLock;
}

/** Lock keys (node_modules/...) that a production install (npm --omit=dev, NPM_INSTALL_DEV=0) contains. */
export function productionPackages(lock: PackageLock): string[] {
  return Object.entries(lock.packages)
    .filter(([key, e]) => key.startsWith('node_modules/') && e.dev !== true && e.link !== true)
    .map(([key]) => key)
    .sort();
}

function topLevel(key: string): boolean {
  const rest = key.slice('node_modules/'.length);
  return !rest.includes('/node_modules/');
}

export interface StageOptions {
  destdir: string;
  /** Compile TypeScript and build the dashboard into the staged tree (as the recipe's do_compile_ts and
   *  do_compile_dashboard do) instead of copying dist/ and dashboard/dist/. */
  build?: boolean;
  root?: string;
  manifest?: StageManifest;
  log?: (line: string) => void;
}

export interface StageResult {
  appDir: string;
  installed: string[];
  skippedOptional: string[];
}

function compileInto(root: string, outDir: string): void {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    throw new Error(
      `TypeScript build failed (exit ${r.status}):\n${(r.stdout + r.stderr).trim().slice(0, 4000)}`,
    );
  }
}

/** The dashboard as the recipe's do_compile_dashboard builds it (esbuild-wasm when the native one cannot run). */
function buildDashboardInto(root: string, outDir: string): void {
  const r = spawnSync(process.execPath, [join(root, 'dashboard', 'build.mjs'), '--out', outDir], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    throw new Error(
      `dashboard build failed (exit ${r.status}):\n${(r.stdout + r.stderr).trim().slice(0, 4000)}`,
    );
  }
}

function copyProductionModules(root: string, appDir: string, lock: PackageLock): string[] {
  const missing: string[] = [];
  for (const key of productionPackages(lock).filter(topLevel)) {
    const from = join(root, key);
    if (!existsSync(from)) {
      // Optional dependencies for other platforms are in the lock but not on disk, as in any install.
      if (lock.packages[key]?.optional || lock.packages[key]?.devOptional) continue;
      missing.push(key);
      continue;
    }
    cpSync(from, join(appDir, key), { recursive: true, verbatimSymlinks: true });
  }
  if (missing.length > 0) {
    throw new Error(`production dependencies missing from node_modules (run npm ci): ${missing.join(', ')}`);
  }
  return productionPackages(lock);
}

export function stage(options: StageOptions): StageResult {
  const root = options.root ?? repoRoot;
  const log = options.log ?? (() => {});
  const manifest = options.manifest ?? parseStageManifest(readFileSync(manifestPath, 'utf8'), manifestPath);
  const destdir = resolve(options.destdir);
  // The stage replaces the app directory under destdir; on / that would be the host's own install.
  if (destdir === '/') throw new Error('refusing to stage into /: pass an empty staging directory');
  const appDir = join(destdir, manifest.app);
  const installed: string[] = [];
  const skippedOptional: string[] = [];
  rmSync(appDir, { recursive: true, force: true });
  mkdirSync(appDir, { recursive: true });

  for (const entry of manifest.entries) {
    if (entry.kind === 'keep') {
      const target = join(appDir, entry.path);
      if (entry.path === 'dist' && options.build) {
        compileInto(root, target);
      } else if (entry.path === 'dashboard/dist' && options.build) {
        buildDashboardInto(root, target);
      } else if (entry.path === 'node_modules') {
        copyProductionModules(root, appDir, readLock(root));
      } else if (existsSync(join(root, entry.path))) {
        mkdirSync(dirname(target), { recursive: true });
        cpSync(join(root, entry.path), target, { recursive: true, verbatimSymlinks: true });
      } else if (entry.optional) {
        skippedOptional.push(entry.path);
        log(`skipped optional ${entry.path} (not built)`);
        continue;
      } else {
        const hint =
          entry.path === 'dist' || entry.path === 'dashboard/dist'
            ? ': run `npm run build` first or pass --build'
            : '';
        throw new Error(`${join(root, entry.path)} is missing${hint}`);
      }
      installed.push(join(manifest.app, entry.path));
    } else if (entry.kind === 'file') {
      const from =
        entry.source.from === 'layer'
          ? join(recipeDir, 'files', entry.source.path)
          : join(root, entry.source.path);
      if (!existsSync(from)) throw new Error(`stage-manifest.txt names ${from}, which does not exist`);
      const to = join(destdir, entry.dest);
      mkdirSync(dirname(to), { recursive: true });
      cpSync(from, to);
      chmodSync(to, entry.mode);
      installed.push(entry.dest);
    } else {
      const to = join(destdir, entry.dest);
      mkdirSync(dirname(to), { recursive: true });
      rmSync(to, { force: true });
      symlinkSync(entry.target, to);
      installed.push(entry.dest);
    }
  }
  // npm makes a package's bin targets executable when it installs them; so does the stage.
  const pkg = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8')) as {
    bin?: Record<string, string>;
  };
  for (const target of Object.values(pkg.bin ?? {})) {
    if (existsSync(join(appDir, target))) chmodSync(join(appDir, target), 0o755);
  }
  log(`staged ${installed.length} entries into ${destdir}`);
  return { appDir, installed, skippedOptional };
}

const REGISTRY = 'https://registry.npmjs.org';

function packageName(key: string): string {
  return key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
}

/**
 * npm-shrinkwrap.json for BitBake's npmsw fetcher: the lock's packages, each with a `resolved` tarball URL
 * (a lock written with omit-lockfile-registry-resolved has none, and the fetcher needs one) and its integrity.
 */
export function shrinkwrapFromLock(lock: PackageLock): PackageLock {
  if ((lock.lockfileVersion ?? 0) < 2) {
    throw new Error(
      `package-lock.json lockfileVersion ${lock.lockfileVersion} is too old: the npmsw fetcher needs 2 or later`,
    );
  }
  const packages: Record<string, LockEntry> = {};
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (key === '' || entry.link) {
      packages[key] = entry;
      continue;
    }
    if (!entry.integrity)
      throw new Error(`package-lock.json: ${key} has no integrity; regenerate the lock with npm install`);
    const name = packageName(key);
    const resolved =
      entry.resolved ?? `${REGISTRY}/${name}/-/${name.slice(name.lastIndexOf('/') + 1)}-${entry.version}.tgz`;
    packages[key] = { ...entry, resolved };
  }
  return { ...lock, packages };
}

function usage(): never {
  console.error(
    'Usage: npm run stage -- --destdir DIR [--build]\n       npm run stage -- --write-shrinkwrap FILE',
  );
  process.exit(2);
}

function main(argv: string[]): void {
  let destdir: string | undefined;
  let shrinkwrap: string | undefined;
  let build = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--destdir') destdir = argv[++i];
    else if (a === '--write-shrinkwrap') shrinkwrap = argv[++i];
    else if (a === '--build') build = true;
    else {
      console.error(`stage: unknown argument ${JSON.stringify(a)}`);
      usage();
    }
  }
  if (shrinkwrap !== undefined) {
    mkdirSync(dirname(resolve(shrinkwrap)), { recursive: true });
    writeFileSync(shrinkwrap, JSON.stringify(shrinkwrapFromLock(readLock()), null, 2) + '\n');
    console.log(`wrote ${shrinkwrap}`);
  }
  if (destdir !== undefined) stage({ destdir, build, log: (l) => console.log(l) });
  if (destdir === undefined && shrinkwrap === undefined) usage();
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    console.error(`stage: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
