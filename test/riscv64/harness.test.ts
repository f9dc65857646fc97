// The engine's C++ side on riscv64 (no riscv64 Node exists to run the addon): our harness
// (bench/native/mnn-generate.cpp), cross-built with clang-19 against the cross-built MNN prefixes, runs under
// qemu-riscv64. The RVV build gives the recorded text on a CPU with V (vlen 128 and 256); on a CPU without V it is
// refused before anything loads, never killed by SIGILL; the plain build (boards like the JH7110) gives the
// recorded text without V. Runs when the prefixes exist (npm run test:arm64 runs it); one skip line otherwise.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { promptOf, recordedCases } from '../arm64/references.js';
import { compareWithMargins } from '../helpers/margin-rule.js';
import { modelFixturesDir, repoRoot } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';

const rvvPrefix = process.env['MNN_ROOT_RISCV64'] || '/opt/mnn-riscv64';
const plainPrefix = process.env['MNN_ROOT_RISCV64_NOVEC'] || '/opt/mnn-riscv64-novec';
const SYSROOT = '/usr/riscv64-linux-gnu';

function missing(): string | undefined {
  for (const p of [rvvPrefix, plainPrefix])
    if (!existsSync(join(p, 'lib', 'libMNN.so')))
      return `no riscv64 MNN at ${p} (MNN_ROOT_RISCV64 / MNN_ROOT_RISCV64_NOVEC)`;
  for (const tool of ['clang++-19', 'qemu-riscv64-static'])
    if (spawnSync('which', [tool]).status !== 0)
      return `${tool} is not installed (scripts/install-arm64-deps.sh)`;
  if (!existsSync(SYSROOT)) return `no riscv64 sysroot at ${SYSROOT} (g++-riscv64-linux-gnu)`;
  return undefined;
}

/** The harness built for riscv64 (rv64gc: its own code needs no V) against one prefix. */
function buildHarness(prefix: string, outDir: string): string {
  const out = join(outDir, `mnn-generate-${prefix.replaceAll('/', '_')}`);
  const r = spawnSync(
    'clang++-19',
    [
      '--target=riscv64-linux-gnu',
      '-march=rv64gc',
      '-fuse-ld=lld',
      '-O2',
      '-std=c++17',
      join(repoRoot, 'bench', 'native', 'mnn-generate.cpp'),
      `-I${prefix}/include`,
      `-L${prefix}/lib`,
      '-lMNN',
      `-Wl,-rpath,${prefix}/lib`,
      '-o',
      out,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`clang++-19 for riscv64 failed:\n${r.stderr}`);
  return out;
}

interface HarnessRun {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

function runUnderQemu(binary: string, cpu: string, config: string, promptFile: string): Promise<HarnessRun> {
  return new Promise((resolve) => {
    execFile(
      'qemu-riscv64-static',
      ['-L', SYSROOT, '-cpu', cpu, binary, config, promptFile],
      { timeout: 600_000, maxBuffer: 8 << 20 },
      (err, stdout, stderr) => {
        const e = err as (Error & { code?: number | string; signal?: string }) | null;
        resolve({
          code: e ? (typeof e.code === 'number' ? e.code : null) : 0,
          signal: e?.signal ?? null,
          stdout,
          stderr,
        });
      },
    );
  });
}

const why = missing();
if (why !== undefined) {
  skipWithLine(`SKIP riscv64 engine harness: ${why}`);
} else {
  const work = mkdtempSync(join(tmpdir(), 'mnn-edge-riscv64-'));
  const harness = { rvv: buildHarness(rvvPrefix, work), plain: buildHarness(plainPrefix, work) };
  const cases = recordedCases().filter((c) => c.model === 'tiny-llm' || c.model === 'tiny-llm-int4');
  const promptFile = (c: (typeof cases)[number]) => {
    const p = join(work, `${c.model}.txt`);
    writeFileSync(p, `${promptOf(c)}\n`);
    return p;
  };

  const cpus = [
    { name: 'RVV build, V on, vlen 128', binary: harness.rvv, cpu: 'rv64,v=true,vlen=128' },
    { name: 'RVV build, V on, vlen 256', binary: harness.rvv, cpu: 'rv64,v=true,vlen=256' },
    { name: 'plain build, no V (as a JH7110)', binary: harness.plain, cpu: 'rv64,v=false' },
  ];
  for (const run of cpus) {
    test.serial(`${run.name}: tiny-llm and tiny-llm-int4 give the recorded text`, async (t) => {
      for (const c of cases) {
        const config = join(modelFixturesDir, c.model, 'config.json');
        const r = await runUnderQemu(run.binary, run.cpu, config, promptFile(c));
        t.is(r.code, 0, `${c.model}: exit ${r.code} signal ${r.signal}\n${r.stderr}`);
        const line = r.stdout.trim().split('\n').pop() ?? '';
        const out = JSON.parse(line) as { text: string; outputIds: number[]; decodeTokens: number };
        const verdict = compareWithMargins(c, out.outputIds);
        t.true(verdict.ok, `${c.model}: ${verdict.summary}`);
        t.is(out.text, c.text, `${c.model}: text (${verdict.summary})`);
        t.log(`${run.name}, ${c.model}: ${verdict.summary}`);
      }
    });
  }

  test.serial('RVV build on a CPU without V: refused with both sides named, never SIGILL', async (t) => {
    const c = cases[0]!;
    const r = await runUnderQemu(
      harness.rvv,
      'rv64,v=false',
      join(modelFixturesDir, c.model, 'config.json'),
      promptFile(c),
    );
    t.is(r.signal, null, `killed by ${r.signal}: ${r.stderr}`);
    t.is(r.code, 3, r.stderr);
    t.regex(
      r.stderr,
      /is built for rv64\S*v1p0\S*, which needs the RISC-V vector extension \(V\), and this CPU has none \(AT_HWCAP=0x[0-9a-f]+ has no V bit\)/,
    );
    t.log(r.stderr.trim());
  });
}
