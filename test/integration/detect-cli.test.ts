import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Capabilities } from '../../lib/capabilities.js';
import { repoRoot, socFixturesDir } from '../helpers/paths.js';

// The real CLI in a child process, as systemd and operators run it.

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import=tsx', 'agent/cli/mnn-edge.ts', 'detect', ...args], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const rk3588 = join(socFixturesDir, 'rockchip-rk3588-rock5b');

test('--root that does not exist: clear error, exit code 2', async (t) => {
  const r = await cli('--root', '/nope');
  t.is(r.code, 2);
  t.is(r.stdout, '');
  t.true(r.stderr.startsWith('mnn-edge detect: --root /nope does not exist\nUsage: mnn-edge detect'));
});

test('--root naming a file: exit code 2', async (t) => {
  const r = await cli('--root', join(rk3588, 'present.txt'));
  t.is(r.code, 2);
  t.regex(r.stderr, /--root .*present\.txt is not a directory/);
});

test('readable report names board, SoC, features, accelerators and backends with reasons', async (t) => {
  const r = await cli('--root', rk3588);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^ {2}model +Radxa ROCK 5B/m);
  t.regex(r.stdout, /^ {2}family +rk3588/m);
  t.regex(r.stdout, /^ {2}cluster +4 × Cortex-A76 @ 2400 MHz \(cpu 4,5,6,7\)/m);
  t.regex(r.stdout, /^ {2}features +fp16 dotprod$/m);
  t.regex(r.stdout, /^ {2}Rockchip NPU +driver rknpu-vendor/m);
  t.regex(r.stdout, /^ {2}rknn +usable +RKNPU driver 0\.9\.6 at \/dev\/dri\/renderD129/m);
  t.regex(r.stdout, /^ {2}opencl +unusable +Mali-G610 present .* but no OpenCL library/m);
  t.regex(r.stdout, /^Board support: Rockchip RK3588 \/ RK3588S$/m);
  t.regex(r.stdout, /^ {2}threads +big-cluster-first: Four threads on the A76 cores/m);
  // A captured tree is another board: nothing about this host may appear in its report.
  t.false(r.stdout.includes('Host (this running system)'));
});

test('the live report ends with this host: OS image, kernel, machine', async (t) => {
  const r = await cli('--no-engine');
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^Host \(this running system\)\n {2}os +\S.*\n {2}kernel +\S+ \S+\n {2}machine +\S/m);
});

test('--json prints the document; --engine-backends narrows the usable set', async (t) => {
  const r = await cli('--root', rk3588, '--json', '--engine-backends', 'cpu,opencl');
  t.is(r.code, 0, r.stderr);
  const caps = JSON.parse(r.stdout) as Capabilities;
  t.is(caps.soc.family.value, 'rk3588');
  t.deepEqual(caps.engineBackends, ['cpu', 'opencl']);
  t.deepEqual(caps.backends.find((b) => b.backend === 'rknn')!.reasons[0], 'MNN built without rknn');
});

test('--write-cache writes the document durably; --from-cache reads it back', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-detect-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'sub', 'capabilities.json');
  const w = await cli('--root', rk3588, '--json', '--write-cache', file);
  t.is(w.code, 0, w.stderr);
  t.deepEqual(JSON.parse(readFileSync(file, 'utf8')), JSON.parse(w.stdout));
  t.is(statSync(file).mode & 0o777, 0o644);
  const r = await cli('--from-cache', file, '--json');
  t.is(r.code, 0, r.stderr);
  t.deepEqual(JSON.parse(r.stdout), JSON.parse(w.stdout));
});

test('--from-cache errors: missing file, not JSON, wrong shape, combined with --root', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-detect-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const missing = await cli('--from-cache', join(dir, 'none.json'));
  t.is(missing.code, 1);
  t.is(
    missing.stderr,
    `mnn-edge detect: cannot read capability cache ${join(dir, 'none.json')}: no such file\n`,
  );
  const junk = join(dir, 'junk.json');
  writeFileSync(junk, '{not json');
  const j = await cli('--from-cache', junk);
  t.is(j.code, 1);
  t.regex(j.stderr, /^mnn-edge detect: capability cache .*junk\.json is not JSON: /);
  const wrong = join(dir, 'wrong.json');
  writeFileSync(wrong, JSON.stringify({ schemaVersion: 2 }));
  const w = await cli('--from-cache', wrong);
  t.is(w.code, 1);
  t.is(
    w.stderr,
    `mnn-edge detect: capability cache ${wrong} has schemaVersion 2; this agent reads 1 (run detect again)\n`,
  );
  const shape = join(dir, 'shape.json');
  writeFileSync(shape, JSON.stringify({ schemaVersion: 1, root: '/' }));
  const s = await cli('--from-cache', shape);
  t.is(s.code, 1);
  t.regex(
    s.stderr,
    /capability cache .*shape\.json is invalid: detectedAt: is required but missing; board: is required/,
  );
  const both = await cli('--from-cache', wrong, '--root', rk3588);
  t.is(both.code, 2);
  t.regex(both.stderr, /--from-cache reads a stored document; it cannot be combined with --root/);
});

test('unknown options are usage errors', async (t) => {
  const r = await cli('--rooot', rk3588);
  t.is(r.code, 2);
  t.regex(r.stderr, /unknown option --rooot/);
});

test('--root: the page size comes from the auxv under the root, or is unknown; never from this host', async (t) => {
  const rpi5 = join(socFixturesDir, 'rpi5-bcm2712');
  const ownRoot = await cli('--root', rpi5);
  // The fixture's AT_PAGESZ is 16 KiB; this host's is not what decides it.
  t.regex(ownRoot.stdout, /^ {2}page size +16384 bytes +\[\/proc\/self\/auxv: AT_PAGESZ=16384\]$/m);
  const dir = mkdtempSync(join(tmpdir(), 'detect-root-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'proc'));
  writeFileSync(join(dir, 'proc', 'cpuinfo'), readFileSync(join(rpi5, 'proc', 'cpuinfo')));
  const withoutAuxv = await cli('--root', dir, '--json');
  t.is((JSON.parse(withoutAuxv.stdout) as Capabilities).memory.pageSize.value, null);
  // A link to the host's /proc is refused rather than followed.
  symlinkSync('/proc/self', join(dir, 'proc', 'self'));
  const linked = await cli('--root', dir);
  t.regex(linked.stdout, /^ {2}page size +unknown +\[\/proc\/self\/auxv: resolves outside the root\]$/m);
});
