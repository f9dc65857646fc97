// The booted arm64 guest, shared by the system tier (scripts/test-system.ts) and the power-cut runs: the cached
// image, the packages' disk, one QEMU boot with the agent's port forwarded to the host's loopback and the guest
// agent's socket, and the waits on /healthz. Every guest runs under `nice`, and a QEMU never outlives the script.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { guestExec } from './guest-agent.js';
import { guestRequest } from './host-http.js';
import { buildTierDebs } from './tier-debs.js';

const repo = join(import.meta.dirname, '..', '..');
export const buildImage = join(repo, 'scripts', 'system-image', 'build-image.sh');
// Generous budgets for a busy 2-core machine emulating arm64 in software; they bound waits, they assert nothing.
// The first boot's dpkg -i (xz and thousands of files under TCG) took over 15 min at load 18 on 2 cores.
export const BOOT_BUDGET_MS = Number(process.env['MNN_EDGE_SYSTEM_BOOT_BUDGET_S'] ?? 45 * 60) * 1000;

export const say = (line: string) => console.log(`test:system: ${line}`);
export function fail(message: string): never {
  console.error(`test:system: FAIL ${message}`);
  process.exit(1);
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export function imageDir(): string {
  const r = spawnSync(buildImage, ['--dir'], { encoding: 'utf8' });
  if (r.status !== 0) fail(`build-image.sh --dir failed: ${r.stderr}`);
  return r.stdout.trim();
}

export function ensureImage(): string | undefined {
  const dir = imageDir();
  if (existsSync(join(dir, 'manifest.json'))) return dir;
  if (process.env['CI']) {
    console.log(
      `SKIP system tier: no cached arm64 image at ${dir} (build it once: ${buildImage}, about an hour)`,
    );
    return undefined;
  }
  say(`no cached image at ${dir}: building it (about an hour; log in ${dir}.partial/build.log)`);
  const r = spawnSync('nice', ['-n', '19', buildImage], { stdio: 'inherit' });
  if (r.status !== 0) fail(`the image build failed (exit ${r.status}): see ${dir}.partial/build.log`);
  return dir;
}

export function needTools(): void {
  for (const tool of ['qemu-system-aarch64', 'qemu-img', 'mkfs.ext4']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
      fail(`${tool} is missing: run scripts/install-system-deps.sh`);
    }
  }
}

/** The .debs on an ext4 disk labelled MNNDEBS, with the marker the image's installer unit looks for. `extras`
 *  (a name on the disk → a directory here) rides along: the system tier's model files; the installer ignores them. */
export function debsDisk(work: string, extras: Record<string, string> = {}): string {
  const dir = join(work, 'debs');
  mkdirSync(dir);
  for (const [name, from] of Object.entries(extras)) cpSync(from, join(dir, name), { recursive: true });
  const given = process.env['MNN_EDGE_SYSTEM_DEBS'];
  if (given) {
    for (const f of readdirSync(given).filter((f) => f.endsWith('_arm64.deb'))) {
      writeFileSync(join(dir, f), readFileSync(join(given, f)));
    }
  } else {
    buildTierDebs(dir, say);
  }
  const debs = readdirSync(dir).filter((f) => f.endsWith('.deb'));
  if (debs.length === 0) fail(`no arm64 .deb to install (MNN_EDGE_SYSTEM_DEBS=${given ?? ''})`);
  say(`installing at first boot: ${debs.join(', ')}`);
  writeFileSync(join(dir, 'install'), '');
  const disk = join(work, 'debs.ext4');
  const r = spawnSync('mkfs.ext4', ['-q', '-L', 'MNNDEBS', '-d', dir, disk, '512M'], { encoding: 'utf8' });
  if (r.status !== 0) fail(`mkfs.ext4 for the packages' disk failed: ${r.stderr}`);
  return disk;
}

export interface Guest {
  port: number;
  qga: string;
  console: string;
  exited: Promise<number | null>;
  kill: () => void;
}

export interface BootOptions {
  /** Further raw disks (virtio, writable), in order after the packages' disk: /dev/vdc, /dev/vdd… when `debs`
   *  is given, /dev/vdb… when it is not. The power-cut run's small disk for the full-disk case is one. */
  drives?: string[];
}

/** `debs` undefined boots without the packages' disk (a guest installed at an earlier boot of the same work
 *  folder: its overlay already holds the packages, and dpkg does not run again). */
export function boot(
  image: string,
  work: string,
  debs: string | undefined,
  port: number,
  options: BootOptions = {},
): Guest {
  const overlay = join(work, 'overlay.qcow2');
  if (!existsSync(overlay)) {
    const r = spawnSync(
      'qemu-img',
      ['create', '-q', '-f', 'qcow2', '-F', 'raw', '-b', join(image, 'rootfs.ext4'), overlay],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) fail(`qemu-img create failed: ${r.stderr}`);
  }
  const qga = join(work, 'qga.sock');
  const consoleLog = join(work, 'console.log');
  const args = [
    '-n',
    '10',
    'qemu-system-aarch64',
    '-M',
    'virt',
    '-cpu',
    'max,pauth-impdef=on',
    '-smp',
    '2',
    '-m',
    '2048',
    '-display',
    'none',
    '-serial',
    `file:${consoleLog}`,
    '-monitor',
    'none',
    '-kernel',
    join(image, 'vmlinuz'),
    '-initrd',
    join(image, 'initrd.img'),
    '-append',
    'root=/dev/vda rw console=ttyAMA0 systemd.show_status=1',
    // cache=writeback on every writable disk (QEMU's default, named so no one changes it to `unsafe`): the guest
    // sees a volatile write cache and its flushes reach the host file, so a killed QEMU loses exactly what the
    // guest had not flushed, as a power cut does.
    '-drive',
    `if=none,id=root,file=${overlay},format=qcow2,cache=writeback`,
    '-device',
    'virtio-blk-pci,drive=root',
    ...(debs === undefined
      ? []
      : [
          '-drive',
          `if=none,id=debs,file=${debs},format=raw,readonly=on`,
          '-device',
          'virtio-blk-pci,drive=debs',
        ]),
    ...(options.drives ?? []).flatMap((file, i) => [
      '-drive',
      `if=none,id=extra${i},file=${file},format=raw,cache=writeback`,
      '-device',
      `virtio-blk-pci,drive=extra${i}`,
    ]),
    '-netdev',
    `user,id=net0,hostfwd=tcp:127.0.0.1:${port}-:8080`,
    '-device',
    'virtio-net-pci,netdev=net0,romfile=',
    '-device',
    'virtio-rng-pci',
    '-chardev',
    `socket,id=qga0,path=${qga},server=on,wait=off`,
    '-device',
    'virtio-serial-pci',
    '-device',
    'virtserialport,chardev=qga0,name=org.qemu.guest_agent.0',
  ];
  const child = spawn('nice', args, { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const kill = () => child.kill('SIGKILL');
  // However this script ends (an exception, a signal), the guest goes with it: no QEMU left on a shared machine.
  process.once('exit', kill);
  // A power-cut run boots the guest dozens of times in one process: each boot's listener goes with its QEMU.
  void exited.then(() => process.off('exit', kill));
  return { port, qga, console: consoleLog, exited, kill };
}

export async function healthz(port: number, budgetMs: number): Promise<{ version: string }> {
  const deadline = Date.now() + budgetMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    try {
      const res = await guestRequest(port, '/healthz', { timeoutMs: 10_000 });
      if (res.status === 200) return JSON.parse(res.text) as { version: string };
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(3000);
  }
  throw new Error(`/healthz did not answer 200 in ${budgetMs / 1000} s (last: ${last})`);
}

export async function sh(guest: Guest, script: string, budgetMs?: number): Promise<string> {
  const r = await guestExec(guest.qga, script, budgetMs);
  if (r.exitcode !== 0) throw new Error(`guest: ${script}: exit ${r.exitcode}: ${r.stderr || r.stdout}`);
  return r.stdout;
}
