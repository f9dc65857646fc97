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
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BOOT_BUDGET_MS,
  boot,
  debsDisk,
  ensureImage,
  fail,
  freePort,
  type Guest,
  healthz,
  needTools,
  say,
  sh,
} from './system-image/guest.js';
import { guestExec, waitForGuestAgent } from './system-image/guest-agent.js';

async function main(): Promise<void> {
  const prefix = process.env['MNN_ROOT_AARCH64'] || '/opt/mnn-aarch64';
  if (!process.env['MNN_EDGE_SYSTEM_DEBS'] && !existsSync(join(prefix, 'lib', 'libMNN.so'))) {
    const why = `no aarch64 MNN at ${prefix} for the arm64 packages (set MNN_ROOT_AARCH64, or MNN_EDGE_SYSTEM_DEBS to a directory of built .debs; docs/DEBIAN.md)`;
    if (process.env['CI']) {
      console.log(`SKIP system tier: ${why}`);
      return;
    }
    fail(why);
  }
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
