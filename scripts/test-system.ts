// `npm run test:system`: the arm64 packages on a booted arm64 Debian 12 under QEMU's system emulator (TCG: no KVM
// here). The image is built from Debian's packages by scripts/system-image/build-image.sh and cached by its inputs
// (about an hour the first time: its dpkg and initramfs run under QEMU user mode); this script builds it when it is
// missing, except under CI, which prints one skip line instead (a first build does not fit CI's time).
//
// The boot: -M virt -cpu max -smp 2 -m 2048, the cached image behind a copy-on-write overlay (it is never
// written), a second disk labelled MNNDEBS with the .debs (the image's mnn-edge-test-debs unit installs them at
// boot, as an operator's `dpkg -i` would), user-mode networking with the agent's port forwarded to 127.0.0.1 only,
// and the guest agent's virtio-serial port for commands. Checks: /healthz from the host; the unit active under
// systemd with its watchdog armed; journald holding the agent's log; identity and pairing token minted at first
// boot; a reboot keeps both.
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { packageDeb } from './package-deb.js';
import { guestExec, waitForGuestAgent } from './system-image/guest-agent.js';

const repo = join(import.meta.dirname, '..');
const buildImage = join(repo, 'scripts', 'system-image', 'build-image.sh');
// Generous budgets for a busy 2-core machine emulating arm64 in software; they bound waits, they assert nothing.
// The first boot's dpkg -i (xz and thousands of files under TCG) took over 15 min at load 18 on 2 cores.
const BOOT_BUDGET_MS = Number(process.env['MNN_EDGE_SYSTEM_BOOT_BUDGET_S'] ?? 45 * 60) * 1000;

const say = (line: string) => console.log(`test:system: ${line}`);
function fail(message: string): never {
  console.error(`test:system: FAIL ${message}`);
  process.exit(1);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

function imageDir(): string {
  const r = spawnSync(buildImage, ['--dir'], { encoding: 'utf8' });
  if (r.status !== 0) fail(`build-image.sh --dir failed: ${r.stderr}`);
  return r.stdout.trim();
}

function ensureImage(): string | undefined {
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

function needTools(): void {
  for (const tool of ['qemu-system-aarch64', 'qemu-img', 'mkfs.ext4']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
      fail(`${tool} is missing: run scripts/install-system-deps.sh`);
    }
  }
}

/** The .debs on an ext4 disk labelled MNNDEBS, with the marker the image's installer unit looks for. */
function debsDisk(work: string): string {
  const dir = join(work, 'debs');
  mkdirSync(dir);
  const given = process.env['MNN_EDGE_SYSTEM_DEBS'];
  if (given) {
    for (const f of readdirSync(given).filter((f) => f.endsWith('_arm64.deb'))) {
      writeFileSync(join(dir, f), readFileSync(join(given, f)));
    }
  } else {
    say('building the arm64 packages (npm run package:deb -- --arch arm64)');
    packageDeb({ arch: 'arm64', outDir: dir, log: () => {} });
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

interface Guest {
  port: number;
  qga: string;
  console: string;
  exited: Promise<number | null>;
  kill: () => void;
}

function boot(image: string, work: string, debs: string, port: number): Guest {
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
    '-drive',
    `if=none,id=root,file=${overlay},format=qcow2`,
    '-device',
    'virtio-blk-pci,drive=root',
    '-drive',
    `if=none,id=debs,file=${debs},format=raw,readonly=on`,
    '-device',
    'virtio-blk-pci,drive=debs',
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
  return { port, qga, console: consoleLog, exited, kill };
}

async function healthz(port: number, budgetMs: number): Promise<{ version: string }> {
  const deadline = Date.now() + budgetMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(10_000) });
      if (res.ok) return (await res.json()) as { version: string };
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(3000);
  }
  throw new Error(`/healthz did not answer 200 in ${budgetMs / 1000} s (last: ${last})`);
}

async function sh(guest: Guest, script: string): Promise<string> {
  const r = await guestExec(guest.qga, script);
  if (r.exitcode !== 0) throw new Error(`guest: ${script}: exit ${r.exitcode}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

async function main(): Promise<void> {
  const image = ensureImage();
  if (image === undefined) return;
  needTools();
  const work = mkdtempSync(join(tmpdir(), 'mnn-edge-system-'));
  const results: string[] = [];
  const check = (name: string, ok: boolean, detail = '') => {
    results.push(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
    say(results.at(-1)!);
    return ok;
  };
  let guest: Guest | undefined;
  try {
    const debs = debsDisk(work);
    const port = await freePort();
    const started = Date.now();
    guest = boot(image, work, debs, port);
    say(`booting (console: ${guest.console}); the agent's port is 127.0.0.1:${port}`);
    const health = await Promise.race([
      healthz(port, BOOT_BUDGET_MS),
      guest.exited.then((code) => {
        throw new Error(`QEMU exited (${code}) before /healthz answered; console: ${guest?.console}`);
      }),
    ]);
    check(
      'boot to /healthz from the host',
      true,
      `${((Date.now() - started) / 1000).toFixed(0)} s, agent ${health.version}`,
    );
    await waitForGuestAgent(guest.qga, 5 * 60_000);

    const show = await sh(
      guest,
      'systemctl show mnn-edge -p ActiveState -p SubState -p Type -p WatchdogUSec -p User',
    );
    check(
      'the unit runs under systemd',
      /ActiveState=active/.test(show) && /Type=notify/.test(show),
      show.replace(/\n/g, ' '),
    );
    check('its watchdog is armed', /WatchdogUSec=3min/.test(show), show.match(/WatchdogUSec=\S+/)?.[0] ?? '');
    const journal = await sh(guest, 'journalctl -u mnn-edge --no-pager -o cat -b | tail -n 40');
    check(
      "journald holds the agent's log",
      journal.trim().split('\n').length > 3,
      `${journal.split('\n').length} lines`,
    );
    const identity = (await sh(guest, 'cat /var/lib/mnn-edge/device-id')).trim();
    const token = (await sh(guest, 'cat /var/lib/mnn-edge/pairing-token')).trim();
    check(
      'first boot minted a device identity and a pairing token',
      identity.length > 0 && token.length >= 43,
      identity,
    );
    const tokenByCli = (
      await sh(guest, 'mnn-edge token --config /etc/mnn-edge/agent.json 2>/dev/null')
    ).trim();
    check('`mnn-edge token` prints that token', tokenByCli === token);

    const bootId = (await sh(guest, 'cat /proc/sys/kernel/random/boot_id')).trim();
    await guestExec(guest.qga, 'systemctl reboot').catch(() => {});
    const rebootStarted = Date.now();
    let newBootId = bootId;
    while (newBootId === bootId && Date.now() - rebootStarted < BOOT_BUDGET_MS) {
      await sleep(5000);
      newBootId =
        (
          await guestExec(guest.qga, 'cat /proc/sys/kernel/random/boot_id').catch(() => undefined)
        )?.stdout.trim() ?? bootId;
    }
    await healthz(port, BOOT_BUDGET_MS);
    check(
      'reboot to /healthz',
      newBootId !== bootId,
      `${((Date.now() - rebootStarted) / 1000).toFixed(0)} s`,
    );
    const identity2 = (await sh(guest, 'cat /var/lib/mnn-edge/device-id')).trim();
    const token2 = (await sh(guest, 'cat /var/lib/mnn-edge/pairing-token')).trim();
    check('a reboot keeps identity and pairing token', identity2 === identity && token2 === token);
  } catch (err) {
    check('system tier', false, (err as Error).message);
    if (guest && existsSync(guest.console))
      console.error(readFileSync(guest.console, 'utf8').split('\n').slice(-60).join('\n'));
  } finally {
    guest?.kill();
    if (process.env['MNN_EDGE_SYSTEM_KEEP']) say(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
  const failed = results.filter((r) => r.startsWith('FAIL'));
  say(`${results.length - failed.length} of ${results.length} checks passed`);
  if (failed.length > 0) process.exit(1);
}

await main();
