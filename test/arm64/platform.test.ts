// The agent as an arm64 board runs it (the arm64 tier, `npm run test:arm64`, runs this file under the arm64 Node
// through QEMU user mode): the process is arm64, its native addons are aarch64 ELF files, `detect` reports the
// emulated CPU from the auxiliary vector and says where /proc/cpuinfo (the host's, under QEMU) disagrees, and the
// daemon starts and serves /healthz.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { elfMachineOfFile } from '../../lib/elf.js';
import { repoRoot } from '../helpers/paths.js';
import { spawnAgentRun } from '../helpers/run-agent.js';
import { skipWithLine } from '../helpers/skip.js';
import { until } from '../helpers/until.js';

interface Claim<T> {
  value: T;
  evidence: Array<{ kind: string; path?: string; value?: string; rule?: string }>;
}

if (process.arch !== 'arm64') {
  skipWithLine(`SKIP arm64 platform tests: this Node is ${process.arch} (run them with npm run test:arm64)`);
} else {
  test('the native addons this process loads are aarch64 ELF files', (t) => {
    for (const name of ['MNN_EDGE_ENGINE_ADDON', 'MNN_EDGE_SQLITE_ADDON'] as const) {
      const path = process.env[name];
      if (path === undefined) return t.fail(`${name} is not set: the tier script sets it`);
      t.is(elfMachineOfFile(path), 'aarch64', `${name}=${path}`);
    }
  });

  test('detect in an arm64 process: aarch64, CPU features from the auxiliary vector, disagreements said', async (t) => {
    const out = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'agent/cli/mnn-edge.ts', 'detect', '--json'],
        { cwd: repoRoot, maxBuffer: 8 << 20, timeout: 600_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
      );
    });
    const caps = JSON.parse(out) as {
      cpu: { architecture: Claim<string>; features: Record<string, Claim<boolean | null>> };
    };
    t.is(caps.cpu.architecture.value, 'aarch64', JSON.stringify(caps.cpu.architecture));
    const rows: string[] = [];
    for (const name of ['fp16', 'dotprod', 'i8mm', 'sve2', 'sme2'] as const) {
      const claim = caps.cpu.features[name];
      if (claim === undefined) return t.fail(`no ${name} claim`);
      const fromAuxv = claim.evidence.find((e) => e.path === '/proc/self/auxv');
      t.truthy(fromAuxv, `${name}: ${JSON.stringify(claim.evidence)}`);
      t.is(typeof claim.value, 'boolean', name);
      rows.push(`${name}=${claim.value} (${fromAuxv?.value})`);
    }
    // QEMU's default arm64 CPU ("max") has fp16 and dot product. Under QEMU user mode /proc/cpuinfo is the x86
    // host's file: the report must say the two sources disagree instead of silently taking one side.
    t.true(caps.cpu.features['fp16']!.value === true, rows.join('; '));
    t.true(caps.cpu.features['dotprod']!.value === true, rows.join('; '));
    t.true(
      caps.cpu.architecture.evidence.some(
        (e) => e.kind === 'inferred' && /\/proc\/cpuinfo describes x86_64 .*another CPU's/.test(e.rule ?? ''),
      ),
      JSON.stringify(caps.cpu.architecture.evidence),
    );
    t.log(rows.join('; '));
  });

  test('the daemon starts under the arm64 Node and serves /healthz', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mnn-edge-arm64-daemon-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const child = spawnAgentRun(dataDir);
    t.teardown(() => child.kill('SIGKILL'));
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString();
    });
    await until(() => /"msg":"listening".*?"port":\d+/.test(out) || child.exitCode !== null, 'listening', {
      timeoutMs: 600_000,
      stepMs: 100,
    });
    const port = /"msg":"listening".*?"port":(\d+)/.exec(out)?.[1];
    if (port === undefined) return t.fail(`the agent exited (${child.exitCode}) before listening:\n${out}`);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    t.is(health.status, 200);
    const body = (await health.json()) as Record<string, unknown>;
    t.truthy(body['status'], JSON.stringify(body));
  });
}
