// The toolchain of the fixture generators that write MNN graphs with MNN Express (tool-model, tiny-talker): an MNN
// install (headers, libMNN.so) and the source tree it was built from, because they write OpType_Attention, whose
// schema header (schema/current/MNN_generated.h) an install does not carry. One place says what is missing and
// compiles a generator, so every generator fails the same clear way on a machine without MNN.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface MnnToolchainOptions {
  /** The install prefix (include/, lib/libMNN.so); default MNN_ROOT, else /opt/mnn. */
  mnnRoot?: string;
  /** The source tree libMNN was built from; default MNN_SRC, else the first of /opt/src/MNN, /opt/mnn-src. */
  mnnSrc?: string;
}

export interface MnnToolchain {
  mnnRoot: string;
  mnnSrc: string;
}

const SOURCE_TREES = ['/opt/src/MNN', '/opt/mnn-src'];

export function mnnToolchain(options: MnnToolchainOptions = {}): MnnToolchain {
  return {
    mnnRoot: options.mnnRoot ?? process.env['MNN_ROOT'] ?? '/opt/mnn',
    mnnSrc:
      options.mnnSrc ??
      process.env['MNN_SRC'] ??
      SOURCE_TREES.find((s) => existsSync(join(s, 'schema', 'current'))) ??
      SOURCE_TREES[0]!,
  };
}

/** Why a generator cannot be built here (one line), or undefined. */
export function mnnToolchainMissing(options: MnnToolchainOptions = {}): string | undefined {
  const { mnnRoot, mnnSrc } = mnnToolchain(options);
  const needed: Array<[string, string]> = [
    [
      join(mnnRoot, 'include', 'MNN', 'expr', 'Expr.hpp'),
      'MNN headers (set MNN_ROOT to an MNN install prefix)',
    ],
    [join(mnnRoot, 'lib', 'libMNN.so'), 'libMNN.so (set MNN_ROOT to an MNN install prefix)'],
    [
      join(mnnSrc, 'schema', 'current', 'MNN_generated.h'),
      'the MNN source tree libMNN was built from (set MNN_SRC)',
    ],
  ];
  for (const [path, what] of needed) if (!existsSync(path)) return `${what}: ${path} is missing`;
  return undefined;
}

/** Compiles the generator `source` (C++17, g++) into `binary`; the error names the generator and g++'s output. */
export async function buildMnnGenerator(
  name: string,
  source: string,
  binary: string,
  options: MnnToolchainOptions = {},
): Promise<void> {
  const missing = mnnToolchainMissing(options);
  if (missing) throw new Error(`cannot build ${name}: ${missing}`);
  const { mnnRoot, mnnSrc } = mnnToolchain(options);
  mkdirSync(dirname(binary), { recursive: true });
  const args = [
    '-O1',
    '-std=c++17',
    source,
    `-I${join(mnnRoot, 'include')}`,
    `-I${join(mnnSrc, 'schema', 'current')}`,
    `-I${join(mnnSrc, '3rd_party', 'flatbuffers', 'include')}`,
    `-L${join(mnnRoot, 'lib')}`,
    '-lMNN',
    `-Wl,-rpath,${join(mnnRoot, 'lib')}`,
    '-o',
    binary,
  ];
  try {
    await run('g++', args, { maxBuffer: 8 << 20 });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw new Error(`g++ failed to build ${name}: ${stderr.slice(-2000)}`);
  }
}

/**
 * A generated package in `root/key`, made once and reused, also by concurrent test processes: each builds into a
 * staging directory of its own (`make` writes the package into the directory it is given) and renames it into
 * place; losing that race to another process is fine. Returns the package's config.json.
 */
export async function cachedPackage(
  root: string,
  key: string,
  make: (staging: string, packageDir: string) => Promise<void>,
): Promise<string> {
  const dir = join(root, key);
  const config = join(dir, 'config.json');
  if (existsSync(config)) return config;
  const staging = join(root, `${key}.${process.pid}.${Date.now()}`);
  try {
    await make(staging, join(staging, 'package'));
    try {
      renameSync(join(staging, 'package'), dir);
    } catch (err) {
      if (!existsSync(config)) throw err;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return config;
}
