// `npm run stage -- --destdir DIR [--build] [--arch MACHINE]` lays out in DIR exactly what the Yocto recipe
// installs, from the same stage-manifest.txt, so the image's layout can be started and tested on a development
// machine. It lists every ELF file in the tree with its CPU and fails when one is not for MACHINE (default: this
// host's), and prints the tree's size.
// `npm run stage -- --write-shrinkwrap FILE` writes the build shrinkwrap the recipe's npmsw fetcher reads and,
// next to the recipe, mnn-edge-licenses.inc; `--fetch-size` prints what the full lock and the build shrinkwrap
// download (asks the registry for each tarball's size).
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildShrinkwrap, licenseInclude } from './build-shrinkwrap.js';
import { type ElfFile, type ElfMachine, listElfFiles, machineOfNodeArch, treeBytes } from './elf.js';
import { measureFetch } from './fetch-size.js';
import { type PackageLock, parseStageManifest, type StageManifest } from './stage-manifest.js';
import { staleOutputs } from './stale-dist.js';

export type { PackageLock } from './stage-manifest.js';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const recipeDir = join(repoRoot, 'yocto', 'meta-mnn-edge', 'recipes-mnn-edge', 'mnn-edge');
export const manifestPath = join(recipeDir, 'files', 'stage-manifest.txt');
export const shrinkwrapPath = join(recipeDir, 'mnn-edge', 'npm-shrinkwrap.json');
export const licenseIncludePath = join(recipeDir, 'mnn-edge-licenses.inc');

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
  /** The CPU every ELF file in the tree must be for; default: this host's. */
  arch?: ElfMachine;
  /**
   * Native files built for the target on this machine (a cross build), by their path in the app directory:
   * `node_modules/better-sqlite3/build/Release/better_sqlite3.node`, `engine/build/Release/mnn_edge_engine.node`.
   * They replace what the host's install holds, as the recipe's own compile for the target does.
   */
  natives?: Record<string, string>;
  /** An MNN install prefix whose lib/*.so files are staged into /usr/lib (the mnn recipe's package). */
  mnnPrefix?: string;
  log?: (line: string) => void;
}

export interface StageResult {
  appDir: string;
  installed: string[];
  skippedOptional: string[];
  /** Every ELF file of the staged tree (relative to destdir) with its CPU. */
  elfFiles: ElfFile[];
  /** Apparent size of the staged tree. */
  bytes: number;
}

/**
 * What npm.bbclass's do_install keeps of a node-gyp build: only build/Release/*.node; the object files,
 * Makefiles and test extensions' intermediate files of `build/` are not part of the image.
 */
function pruneNodeGypBuilds(modulesDir: string): void {
  const visit = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (!statSync(path).isDirectory() || lstatSync(path).isSymbolicLink()) continue;
      const release = join(path, 'build', 'Release');
      if (existsSync(release)) {
        const addons = readdirSync(release).filter((n) => n.endsWith('.node'));
        const keep = addons.map((n) => [n, readFileSync(join(release, n))] as const);
        rmSync(join(path, 'build'), { recursive: true, force: true });
        mkdirSync(release, { recursive: true });
        for (const [n, data] of keep) writeFileSync(join(release, n), data, { mode: 0o755 });
      }
      if (name.startsWith('@') || name === 'node_modules') visit(path);
      else if (existsSync(join(path, 'node_modules'))) visit(join(path, 'node_modules'));
    }
  };
  if (existsSync(modulesDir)) visit(modulesDir);
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
  // As `npm run build` and the recipe's do_compile_ts: the CLI bundled in place (bench/startup says why).
  const b = spawnSync(process.execPath, [join(root, 'scripts', 'bundle-agent.mjs'), outDir], {
    cwd: root,
    encoding: 'utf8',
  });
  if (b.status !== 0) {
    throw new Error(
      `agent bundle failed (exit ${b.status}):\n${(b.stdout + b.stderr).trim().slice(0, 4000)}`,
    );
  }
}

/** A dist/ copied as it is must be a clean build: output of a removed source would ship and could be loaded. */
function refuseStaleDist(root: string): void {
  const stale = staleOutputs(join(root, 'dist'), root);
  if (stale.length === 0) return;
  const shown = stale.slice(0, 5).join(', ') + (stale.length > 5 ? ` and ${stale.length - 5} more` : '');
  throw new Error(
    `${join(root, 'dist')} holds output that no source produces any more (${shown}): run \`npm run build\` (it starts from an empty dist/) or pass --build`,
  );
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
  pruneNodeGypBuilds(join(appDir, 'node_modules'));
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
        if (entry.path === 'dist') refuseStaleDist(root);
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
  for (const [rel, from] of Object.entries(options.natives ?? {})) {
    if (!existsSync(from)) throw new Error(`--native ${rel}=${from}: no such file`);
    const to = join(appDir, rel);
    if (!to.startsWith(appDir + sep)) throw new Error(`--native ${rel}: the path leaves the app directory`);
    mkdirSync(dirname(to), { recursive: true });
    cpSync(from, to);
    installed.push(join(manifest.app, rel));
  }
  if (options.mnnPrefix !== undefined) {
    const libDir = join(options.mnnPrefix, 'lib');
    const libs = existsSync(libDir) ? readdirSync(libDir).filter((f) => /\.so(\.|$)/.test(f)) : [];
    if (libs.length === 0) throw new Error(`--mnn-prefix ${options.mnnPrefix}: no lib/*.so files`);
    mkdirSync(join(destdir, 'usr', 'lib'), { recursive: true });
    for (const f of libs) {
      cpSync(join(libDir, f), join(destdir, 'usr', 'lib', f));
      installed.push(join('usr', 'lib', f));
    }
  }
  // npm makes a package's bin targets executable when it installs them; so does the stage.
  const pkg = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8')) as {
    bin?: Record<string, string>;
  };
  for (const target of Object.values(pkg.bin ?? {})) {
    if (existsSync(join(appDir, target))) chmodSync(join(appDir, target), 0o755);
  }
  const elfFiles = listElfFiles(destdir);
  const arch = options.arch ?? machineOfNodeArch(process.arch);
  for (const f of elfFiles) log(`ELF ${f.machine.padEnd(8)} ${f.path}`);
  const foreign = elfFiles.filter((f) => f.machine !== arch);
  if (foreign.length > 0) {
    throw new Error(
      `the staged tree has ELF files for another CPU than ${arch}: ${foreign
        .map((f) => `${f.path} (${f.machine})`)
        .join(', ')}`,
    );
  }
  const bytes = treeBytes(destdir);
  log(
    `staged ${installed.length} entries into ${destdir}: ${(bytes / 1e6).toFixed(1)} MB, ${elfFiles.length} ELF file(s), all ${arch}`,
  );
  return { appDir, installed, skippedOptional, elfFiles, bytes };
}

/** Kept for callers of the old name: the build shrinkwrap (production packages plus the build tools). */
export const shrinkwrapFromLock = buildShrinkwrap;

function usage(): never {
  console.error(
    'Usage: npm run stage -- --destdir DIR [--build] [--arch x86_64|aarch64|riscv64] [--native APP_PATH=FILE …]\n' +
      '                        [--mnn-prefix DIR]\n' +
      '       npm run stage -- --write-shrinkwrap FILE\n       npm run stage -- --fetch-size',
  );
  process.exit(2);
}

const ARCHES: readonly ElfMachine[] = ['x86_64', 'aarch64', 'riscv64', 'arm'];

async function main(argv: string[]): Promise<void> {
  let destdir: string | undefined;
  let shrinkwrap: string | undefined;
  let build = false;
  let fetchSize = false;
  let arch: ElfMachine | undefined;
  let mnnPrefix: string | undefined;
  const natives: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--destdir') destdir = argv[++i];
    else if (a === '--write-shrinkwrap') shrinkwrap = argv[++i];
    else if (a === '--build') build = true;
    else if (a === '--fetch-size') fetchSize = true;
    else if (a === '--mnn-prefix') mnnPrefix = argv[++i];
    else if (a === '--native') {
      const value = argv[++i] ?? '';
      const eq = value.indexOf('=');
      if (eq <= 0 || eq === value.length - 1) {
        console.error(`stage: --native takes APP_PATH=FILE, got ${JSON.stringify(value)}`);
        usage();
      }
      natives[value.slice(0, eq)] = resolve(value.slice(eq + 1));
    } else if (a === '--arch') {
      const value = argv[++i] as ElfMachine;
      if (!ARCHES.includes(value)) {
        console.error(`stage: --arch must be one of ${ARCHES.join(', ')}, got ${JSON.stringify(value)}`);
        usage();
      }
      arch = value;
    } else {
      console.error(`stage: unknown argument ${JSON.stringify(a)}`);
      usage();
    }
  }
  if (shrinkwrap !== undefined) {
    mkdirSync(dirname(resolve(shrinkwrap)), { recursive: true });
    writeFileSync(shrinkwrap, JSON.stringify(buildShrinkwrap(readLock()), null, 2) + '\n');
    console.log(`wrote ${shrinkwrap}`);
    writeFileSync(licenseIncludePath, licenseInclude(readLock(), repoRoot));
    console.log(`wrote ${licenseIncludePath}`);
  }
  if (fetchSize) {
    const lock = readLock();
    const full = await measureFetch(lock);
    const trimmed = await measureFetch(buildShrinkwrap(lock));
    const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
    console.log(
      `npm fetch, every package of package-lock.json: ${full.packages} tarballs, ${mb(full.bytes)}`,
    );
    console.log(
      `npm fetch, build shrinkwrap: ${trimmed.packages} tarballs, ${mb(trimmed.bytes)} (${((100 * trimmed.bytes) / full.bytes).toFixed(1)} %)`,
    );
  }
  if (destdir !== undefined)
    stage({
      destdir,
      build,
      arch,
      natives,
      ...(mnnPrefix !== undefined ? { mnnPrefix: resolve(mnnPrefix) } : {}),
      log: (l) => console.log(l),
    });
  if (destdir === undefined && shrinkwrap === undefined && !fetchSize) usage();
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(`stage: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
