// `npm run package:deb -- --arch arm64|amd64 [--out DIR] [--version V] [--build]`: Debian packages for the boards'
// own OS (Debian, Ubuntu, Raspberry Pi OS, Armbian, JetPack), three per architecture (docs/DEBIAN.md says why):
//   mnn-edge         the agent as the Yocto image installs it (scripts/stage.ts, the same stage-manifest.txt, unit,
//                    sysusers, tmpfiles and agent.json), with its production node_modules built for the target
//   mnn-edge-engine  our engine addon and the MNN libraries it was built against (replaceable on the board)
//   mnn-edge-node    the Node runtime (no supported board OS ships Node >= 20.18)
// and one for all of them: mnn-edge-wake, the shipped wake word (scripts/deb/wake.ts; --no-wake leaves it out).
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { assemblyMissing } from '../models/wake-shipped/assemble.js';
import { agentCopyright, engineCopyright, nodeCopyright } from './deb/copyright.js';
import { buildDeb, type DebPackage, place } from './deb/deb-file.js';
import { GPU_LOADERS_SUBDIR, placeGpuLoaderLinks } from './deb/gpu-loaders.js';
import {
  DEB_ARCHES,
  type DebArch,
  type DebInputs,
  debInputs,
  MissingInput,
  mnnLibraries,
  NODE_VERSION,
} from './deb/inputs.js';
import { clearExecStack, pruneForDebian, stripElf } from './deb/prune.js';
import { packageWakeDeb, WAKE_DEB } from './deb/wake.js';
import { manifestPath, readLock, repoRoot, stage } from './stage.js';
import { parseStageManifest } from './stage-manifest.js';

export const APP = '/usr/lib/node_modules/mnn-edge';
export const NODE_BIN = '/usr/lib/mnn-edge/node/bin/node';
export const ENGINE_LIB_DIR = '/usr/lib/mnn-edge/engine';
const ADDON_REL = 'engine/build/Release/mnn_edge_engine.node';
const BETTER_SQLITE3_REL = 'node_modules/better-sqlite3/build/Release';
/** Node's V8 ABI (NODE_MODULE_VERSION) changes with the major version; better-sqlite3 is built for this one. */
const NODE_DEPENDS = [`mnn-edge-node (>= 20.18)`, `mnn-edge-node (<< 21)`];

/** Manifest destinations the Debian package leaves out, with why (anything else unknown is an error). */
const LEFT_OUT: Record<string, string> = {
  '/etc/mnn-edge/agent-mosquitto.json':
    'the mnn-edge-mosquitto variant is Yocto only; Debian uses the embedded broker',
  '/usr/lib/systemd/system/mnn-edge.service.d/50-local-mosquitto.conf': 'mnn-edge-mosquitto variant',
  '/usr/lib/systemd/system/mosquitto.service.d/50-mnn-edge.conf': 'mnn-edge-mosquitto variant',
  '/etc/mnn-edge/mosquitto.conf': 'mnn-edge-mosquitto variant',
  '/etc/mnn-edge/mosquitto.acl': 'mnn-edge-mosquitto variant',
};
/** Taken over unchanged from the stage. */
const TAKEN = [
  '/usr/lib/sysusers.d/mnn-edge.conf',
  '/usr/lib/tmpfiles.d/mnn-edge.conf',
  '/etc/mnn-edge/agent.json',
];
const UNIT = '/usr/lib/systemd/system/mnn-edge.service';
const CLI = '/usr/bin/mnn-edge';

/** The Yocto unit with the Node this package ships: the only change, and it must happen exactly once. */
export function debianUnit(yoctoUnit: string): string {
  const from = 'ExecStart=/usr/bin/node ';
  const count = yoctoUnit.split(from).length - 1;
  if (count !== 1) throw new Error(`mnn-edge.service: expected one "${from}…" line, found ${count}`);
  return yoctoUnit.replace(from, `ExecStart=${NODE_BIN} `);
}

/** /usr/bin/mnn-edge: the CLI under the shipped Node, whatever `node` (if any) is on PATH. */
export function cliWrapper(): string {
  return `#!/bin/sh\nexec ${NODE_BIN} ${APP}/dist/agent/cli/mnn-edge.js "$@"\n`;
}

function maintainerScripts(arch: DebArch, version: string): Record<string, string> {
  const dir = join(repoRoot, 'packaging', 'debian');
  const out: Record<string, string> = {};
  for (const name of ['preinst', 'postinst', 'prerm', 'postrm']) {
    out[name] = readFileSync(join(dir, `mnn-edge.${name}`), 'utf8')
      .replaceAll('@ARCH@', arch)
      .replaceAll('@VERSION@', version);
  }
  return out;
}

function patchelf(args: string[]): void {
  const r = spawnSync('patchelf', args, { encoding: 'utf8' });
  if (r.error) throw new MissingInput('patchelf is missing: run scripts/install-system-deps.sh');
  if (r.status !== 0) throw new Error(`patchelf ${args.join(' ')} failed: ${r.stderr.trim()}`);
}

function patchRunpath(file: string, runpath: string): void {
  patchelf(['--set-rpath', runpath, file]);
}

export interface PackageResult {
  debs: { name: string; path: string; bytes: number }[];
  backends: string[];
  /** The version the packages were built as (the wake package takes the same). */
  version: string;
}

interface Tree {
  root: string;
  pkg: DebPackage;
}

function overrides(root: string, name: string): void {
  const file = join(repoRoot, 'packaging', 'debian', `${name}.lintian-overrides`);
  if (existsSync(file)) place(root, `usr/share/lintian/overrides/${name}`, file);
}

/** The Yocto layout staged with this architecture's native parts; every manifest entry is placed or named. */
function stageForDebian(work: string, inputs: DebInputs, build: boolean, log: (l: string) => void): string {
  const staged = join(work, 'stage');
  stage({
    destdir: staged,
    ...(build ? { build: true } : {}),
    arch: inputs.elfMachine,
    // Every addon of better-sqlite3's build for the target (its test_extension.node too: the stage replaces what
    // the host's install holds, and an x86 leftover would fail its ELF check); the test one is dropped below.
    natives: {
      ...Object.fromEntries(
        readdirSync(inputs.betterSqlite3)
          .filter((f) => f.endsWith('.node'))
          .map((f) => [`${BETTER_SQLITE3_REL}/${f}`, join(inputs.betterSqlite3, f)]),
      ),
      [ADDON_REL]: inputs.engineAddon,
    },
    log,
  });
  const manifest = parseStageManifest(readFileSync(manifestPath, 'utf8'), manifestPath);
  for (const e of manifest.entries) {
    if (e.kind === 'keep') continue;
    if (!(e.dest in LEFT_OUT) && !TAKEN.includes(e.dest) && e.dest !== UNIT && e.dest !== CLI) {
      throw new Error(`stage-manifest.txt installs ${e.dest}, which the Debian package does not place yet`);
    }
  }

  return staged;
}

function agentTree(work: string, staged: string, inputs: DebInputs, version: string): Tree {
  const { arch } = inputs;
  // mnn-edge: the staged app without the engine addon, the unit, sysusers/tmpfiles, agent.json, the CLI.
  const agent = join(work, 'mnn-edge');
  place(agent, APP, join(staged, APP));
  rmSync(join(agent, APP, 'engine'), { recursive: true, force: true });
  pruneForDebian(join(agent, APP), inputs.elfMachine);
  for (const dest of TAKEN) place(agent, dest, join(staged, dest));
  mkdirSync(join(agent, 'usr/lib/systemd/system'), { recursive: true });
  writeFileSync(join(agent, UNIT), debianUnit(readFileSync(join(staged, UNIT), 'utf8')));
  mkdirSync(join(agent, 'usr/bin'), { recursive: true });
  writeFileSync(join(agent, CLI), cliWrapper(), { mode: 0o755 });
  overrides(agent, 'mnn-edge');
  const agentPkg: DebPackage = {
    name: 'mnn-edge',
    version,
    arch,
    depends: [...NODE_DEPENDS, 'systemd', 'libc6', 'libstdc++6'],
    recommends: [`mnn-edge-engine (= ${version})`, WAKE_DEB],
    section: 'misc',
    summary: 'on-board AI agent: model placement, MNN engine, fleet and OTA, dashboard',
    description:
      'The mnn-edge agent for embedded Linux boards: detects the SoC, places\n' +
      'models on its CPU, GPU and NPU backends, serves an OpenAI-compatible API,\n' +
      'a voice assistant and a local dashboard, and takes fleet commands and OTA\n' +
      'over MQTT. It runs as the systemd service mnn-edge under its own system\n' +
      'user; its data lives in /var/lib/mnn-edge.',
    conffiles: ['/etc/mnn-edge/agent.json'],
    scripts: maintainerScripts(arch, version),
    copyright: agentCopyright(readLock(repoRoot)),
  };

  return { root: agent, pkg: agentPkg };
}

function engineTree(
  work: string,
  staged: string,
  inputs: DebInputs,
  version: string,
): Tree & { backends: string[] } {
  const { arch } = inputs;
  // mnn-edge-engine: the addon with the MNN it links against, found through a RUNPATH of the private dir.
  const engine = join(work, 'mnn-edge-engine');
  const libs = mnnLibraries(inputs.mnnPrefix, inputs.engineAddon);
  const loaderLinks = placeGpuLoaderLinks(engine, ENGINE_LIB_DIR, arch, libs.backends);
  const loaderDir = join(ENGINE_LIB_DIR, GPU_LOADERS_SUBDIR);
  place(engine, join(APP, ADDON_REL), join(staged, APP, ADDON_REL));
  // The addon's backend probe dlopens the loaders too, and dlopen searches the caller's RUNPATH.
  patchRunpath(
    join(engine, APP, ADDON_REL),
    loaderLinks.length > 0 ? `${ENGINE_LIB_DIR}:${loaderDir}` : ENGINE_LIB_DIR,
  );
  stripElf(join(engine, APP, ADDON_REL), inputs.elfMachine);
  for (const lib of libs.files) {
    const to = join(ENGINE_LIB_DIR, lib.split('/').pop()!);
    place(engine, to, lib);
    stripElf(join(engine, to), inputs.elfMachine);
    // MNN's assembly kernels carry no .note.GNU-stack, so the loader would make every thread stack executable.
    clearExecStack(join(engine, to));
    if (loaderLinks.length > 0 && libs.loaderUsers.includes(lib))
      patchRunpath(join(engine, to), `$ORIGIN:$ORIGIN/${GPU_LOADERS_SUBDIR}`);
  }
  overrides(engine, 'mnn-edge-engine');
  const enginePkg: DebPackage = {
    name: 'mnn-edge-engine',
    version,
    arch,
    depends: [`mnn-edge (= ${version})`, 'libc6', 'libstdc++6', 'libgcc-s1'],
    recommends: [
      ...(libs.backends.includes('vulkan') ? ['libvulkan1'] : []),
      ...(libs.backends.includes('opencl') ? ['ocl-icd-libopencl1 | opencl-icd'] : []),
    ],
    section: 'misc',
    summary: `generic MNN engine for mnn-edge (${libs.backends.join(', ')})`,
    description:
      `MNN built for any ${arch} CPU (backends: ${libs.backends.join(', ')}) and the\n` +
      'mnn-edge engine addon built against it. `mnn-edge engine build` on the\n' +
      "board makes one tuned to the board's SoC; the agent then loads that one\n" +
      '(MNN_EDGE_ENGINE_ADDON) and this package stays as the fallback or goes.',
    copyright: engineCopyright(),
  };

  return { root: engine, pkg: enginePkg, backends: libs.backends };
}

function nodeTree(work: string, inputs: DebInputs): Tree {
  const { arch } = inputs;
  // mnn-edge-node: the official Node build, under a private prefix so it never shadows a system node.
  const node = join(work, 'mnn-edge-node');
  place(node, NODE_BIN, join(inputs.nodeDir, 'bin', 'node'));
  stripElf(join(node, NODE_BIN), inputs.elfMachine);
  overrides(node, 'mnn-edge-node');
  const nodePkg: DebPackage = {
    name: 'mnn-edge-node',
    version: NODE_VERSION,
    arch,
    depends: ['libc6 (>= 2.28)', 'libstdc++6', 'libgcc-s1'],
    section: 'interpreters',
    summary: `Node.js ${NODE_VERSION} runtime for mnn-edge`,
    description:
      `The official Node.js ${NODE_VERSION} Linux build (npm's node-linux-${arch === 'amd64' ? 'x64' : 'arm64'}: the\n` +
      'nodejs.org binary repackaged) under /usr/lib/mnn-edge/node, so that it\n' +
      'never replaces a system node. Debian 12 ships Node 18 and Ubuntu 22.04\n' +
      'Node 12; mnn-edge needs 20.18 or newer.',
    copyright: nodeCopyright(readFileSync(join(inputs.nodeDir, 'LICENSE'), 'utf8')),
  };

  return { root: node, pkg: nodePkg };
}

export function packageDeb(options: {
  arch: DebArch;
  outDir: string;
  version?: string;
  build?: boolean;
  /** Build only these packages (a test that needs the agent need not compress a 95 MB Node). */
  only?: readonly string[];
  log?: (line: string) => void;
}): PackageResult {
  const log = options.log ?? (() => {});
  const inputs = debInputs(options.arch, repoRoot);
  const version =
    options.version ??
    (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
  const work = mkdtempSync(join(tmpdir(), `mnn-edge-deb-${options.arch}-`));
  const date = new Date(Number(process.env['SOURCE_DATE_EPOCH'] ?? Date.now() / 1000) * 1000);
  try {
    const staged = stageForDebian(work, inputs, options.build === true, log);
    const engine = engineTree(work, staged, inputs, version);
    const trees = [agentTree(work, staged, inputs, version), engine, nodeTree(work, inputs)];
    const outDir = resolve(options.outDir);
    const debs = trees
      .filter(({ pkg }) => options.only === undefined || options.only.includes(pkg.name))
      .map(({ pkg, root }) => {
        const path = buildDeb(root, pkg, outDir, date);
        const bytes = statSync(path).size;
        log(`built ${path}: ${(bytes / 1e6).toFixed(1)} MB`);
        return { name: pkg.name, path, bytes };
      });
    return { debs, backends: engine.backends, version };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function main(argv: string[]): Promise<void> {
  let arch: DebArch | undefined;
  let outDir = join(repoRoot, 'build-deb');
  let version: string | undefined;
  let build = false;
  let wake = true;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--arch') {
      const v = argv[++i] as DebArch;
      if (!DEB_ARCHES.includes(v))
        throw new MissingInput(`--arch must be one of ${DEB_ARCHES.join(', ')}, got ${JSON.stringify(v)}`);
      arch = v;
    } else if (a === '--out') outDir = resolve(argv[++i] ?? '');
    else if (a === '--version') version = argv[++i];
    else if (a === '--build') build = true;
    else if (a === '--no-wake') wake = false;
    else
      throw new MissingInput(
        `unknown argument ${JSON.stringify(a)}; usage: package:deb -- --arch amd64|arm64 [--out DIR] [--version V] [--build] [--no-wake]`,
      );
  }
  if (arch === undefined) throw new MissingInput('--arch amd64|arm64 is required');
  // Before the long part: a machine that cannot assemble the wake word says so at once.
  const cannot = wake ? assemblyMissing() : undefined;
  if (cannot) throw new MissingInput(`${cannot}; pass --no-wake to build the packages without ${WAKE_DEB}`);
  const log = (l: string) => console.log(l);
  const r = packageDeb({ arch, outDir, ...(version ? { version } : {}), build, log });
  console.log(`engine backends: ${r.backends.join(', ')}`);
  // Said, never silently skipped: a package set without the wake word is one the user asked for.
  if (!wake) console.log(`${WAKE_DEB}: left out (--no-wake); boards get no wake word from these packages`);
  else
    await packageWakeDeb({
      outDir,
      version: version ?? r.version,
      date: new Date(Number(process.env['SOURCE_DATE_EPOCH'] ?? Date.now() / 1000) * 1000),
      log,
    });
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(`package:deb: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
