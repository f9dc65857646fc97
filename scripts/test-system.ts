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
// boot; `systemctl reload` applying agent.json (scripts/system-image/checks-reload.ts); tiny-llm answering through
// the OpenAI API (checks-llm.ts); the dashboard in the host's Chromium (checks-dashboard.ts); an OTA install and a
// rollback over the host's mosquitto (checks-ota.ts); then a reboot keeping identity, pairing, settings and the
// model OTA left active; in each boot, no restart by systemd (a crash, the watchdog, an overrun start). The guest runs only while this script holds the machine's QEMU lock (qemu-lock.ts).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { modelFixturesDir } from '../test/helpers/paths.js';
import { dashboardLoads } from './system-image/checks-dashboard.js';
import { llmAnswers } from './system-image/checks-llm.js';
import {
  type OtaHost,
  otaInstallAndRollback,
  otaKeptAcrossReboot,
  prepareOta,
} from './system-image/checks-ota.js';
import { reloadAppliesSettings, TIER_TAG } from './system-image/checks-reload.js';
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
import { takeQemuLock } from './system-image/qemu-lock.js';
import { type AgentApi, api, Checks, waitFor } from './system-image/tier.js';

/** The first boot's checks; returns the identity and token the later checks use. */
async function firstBoot(guest: Guest, port: number, started: number, checks: Checks) {
  const health = await Promise.race([
    healthz(port, BOOT_BUDGET_MS),
    guest.exited.then((code) => {
      throw new Error(`QEMU exited (${code}) before /healthz answered; console: ${guest.console}`);
    }),
  ]);
  checks.check('boot to /healthz from the host', true, `agent ${health.version}`, started);
  await waitForGuestAgent(guest.qga, 5 * 60_000);

  // /healthz answers a moment before systemd has READY=1: the agent notifies once it serves, through a
  // systemd-notify child that takes seconds under TCG. So the unit is given a budget to become active; a unit
  // that never does (a lost READY=1, a start timeout) still fails here, with the state it was left in.
  const showUnit = () =>
    sh(guest, 'systemctl show mnn-edge -p ActiveState -p SubState -p Type -p WatchdogUSec -p User');
  const show = await waitFor('mnn-edge.service active', 5 * 60_000, async () => {
    const text = await showUnit();
    return /ActiveState=active/.test(text) ? text : undefined;
  }).catch(() => showUnit());
  checks.check(
    'the unit runs under systemd',
    /ActiveState=active/.test(show) && /Type=notify/.test(show),
    show.replace(/\n/g, ' '),
  );
  checks.check(
    'its watchdog is armed',
    /WatchdogUSec=3min/.test(show),
    show.match(/WatchdogUSec=\S+/)?.[0] ?? '',
  );
  const journal = await sh(guest, 'journalctl -u mnn-edge --no-pager -o cat -b | tail -n 40');
  checks.check(
    "journald holds the agent's log",
    journal.trim().split('\n').length > 3,
    `${journal.split('\n').length} lines`,
  );
  const identity = (await sh(guest, 'cat /var/lib/mnn-edge/device-id')).trim();
  const token = (await sh(guest, 'cat /var/lib/mnn-edge/pairing-token')).trim();
  checks.check(
    'first boot minted a device identity and a pairing token',
    identity.length > 0 && token.length >= 43,
    identity,
  );
  const tokenByCli = (await sh(guest, 'mnn-edge token --config /etc/mnn-edge/agent.json 2>/dev/null')).trim();
  checks.check('`mnn-edge token` prints that token', tokenByCli === token);
  return { identity, token };
}

/** `systemctl reboot` in the guest, as an installed board reboots: the packages are not installed again. */
async function reboot(guest: Guest, port: number, checks: Checks): Promise<void> {
  await sh(guest, 'systemctl disable mnn-edge-test-debs.service 2>&1');
  const bootId = (await sh(guest, 'cat /proc/sys/kernel/random/boot_id')).trim();
  await guestExec(guest.qga, 'systemctl reboot').catch(() => {});
  const started = Date.now();
  let newBootId = bootId;
  while (newBootId === bootId && Date.now() - started < BOOT_BUDGET_MS) {
    await sleep(5000);
    newBootId =
      (
        await guestExec(guest.qga, 'cat /proc/sys/kernel/random/boot_id').catch(() => undefined)
      )?.stdout.trim() ?? bootId;
  }
  await healthz(port, BOOT_BUDGET_MS);
  checks.check('reboot to /healthz', newBootId !== bootId, '', started);
}

async function afterReboot(guest: Guest, agent: AgentApi, identity: string, checks: Checks): Promise<void> {
  const identity2 = (await sh(guest, 'cat /var/lib/mnn-edge/device-id')).trim();
  const token2 = (await sh(guest, 'cat /var/lib/mnn-edge/pairing-token')).trim();
  checks.check('a reboot keeps identity and pairing token', identity2 === identity && token2 === agent.token);
  const session = await api<{ device: { tags: string[] } }>(agent, '/api/session');
  checks.check(
    'a reboot keeps the settings (the tags from agent.json)',
    session.device.tags.includes(TIER_TAG),
    JSON.stringify(session.device.tags),
  );
}

/** systemd restarts the agent only when it died, hung (watchdog) or overran its start: none may happen in a boot.
 *  NRestarts counts those automatic restarts only, and an explicit `systemctl restart` sets it back to 0. The
 *  start's length, from ExecStartPre to READY=1, is printed beside the unit's TimeoutStartSec as a record. */
async function noRestartBySystemd(guest: Guest, checks: Checks, when: string): Promise<void> {
  const show = await sh(
    guest,
    'systemctl show mnn-edge -p NRestarts -p InactiveExitTimestampMonotonic -p ActiveEnterTimestampMonotonic -p TimeoutStartUSec',
  );
  const field = (key: string) => show.match(new RegExp(`^${key}=(.*)$`, 'm'))?.[1] ?? '';
  const startS =
    (Number(field('ActiveEnterTimestampMonotonic')) - Number(field('InactiveExitTimestampMonotonic'))) / 1e6;
  say(
    `${when}: the agent's last start took ${startS.toFixed(1)} s to READY=1 (TimeoutStartSec ${field('TimeoutStartUSec')})`,
  );
  const restarts = field('NRestarts');
  checks.check(`${when}: systemd never restarted the agent`, restarts === '0', `NRestarts=${restarts}`);
  // The record now: a later `systemctl restart` (the OTA checks) or the reboot loses what this boot showed.
  if (restarts !== '0') await printAgentRecord(guest);
}

/** After a failed check, while the guest still runs: what systemd and journald saw of the agent this boot (a
 *  restart between two checks shows here and nowhere else). Best effort: the guest may be what failed. */
async function printAgentRecord(guest: Guest): Promise<void> {
  const record = await sh(
    guest,
    'systemctl show mnn-edge -p NRestarts -p Result -p ExecMainStatus -p ActiveEnterTimestamp; ' +
      // How each earlier instance of this boot ended (systemd's lines, the modules it started, its warnings and
      // errors), then the tail of the one running now.
      'journalctl -u mnn-edge -b --no-pager -o short-monotonic | grep -E \'systemd\\[1\\]|"level":"(warn|error|fatal)"|"msg":"module started"|Error|error:\' | tail -n 80; ' +
      'echo ---; journalctl -u mnn-edge -b --no-pager -o short-monotonic | tail -n 40',
  ).catch((err: unknown) => `(the guest did not answer: ${(err as Error).message})`);
  say(`the agent's record this boot, for the failed checks:\n${record}`);
}

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
  const checks = new Checks();
  let guest: Guest | undefined;
  let ota: OtaHost | undefined;
  let lock: { release: () => Promise<void> } | undefined;
  try {
    // Everything the host prepares comes before the lock: the packages, the model disk, the OTA side.
    const debs = debsDisk(work, { 'tiny-llm': join(modelFixturesDir, 'tiny-llm') });
    ota = await prepareOta(work);
    const port = await freePort();
    lock = await takeQemuLock(say);
    const started = Date.now();
    guest = boot(image, work, debs, port);
    say(`booting (console: ${guest.console}); the agent's port is 127.0.0.1:${port}`);
    const g = guest;
    const { identity, token } = await firstBoot(g, port, started, checks);
    const agent: AgentApi = { port, token };
    const host = ota;
    await checks.group('systemctl reload', () => reloadAppliesSettings(g, agent, checks));
    await checks.group('tiny-llm in the guest', () => llmAnswers(agent, checks, 'at first boot'));
    await checks.group('the dashboard', () => dashboardLoads(agent, identity, checks));
    // Before the OTA checks' `systemctl restart`, which resets systemd's restart count.
    await checks.group('first boot, systemd', () => noRestartBySystemd(g, checks, 'first boot'));
    await checks.group('OTA', () => otaInstallAndRollback(g, agent, identity, host, checks));
    if (await checks.group('the reboot', () => reboot(g, port, checks))) {
      await checks.group('after the reboot', () => afterReboot(g, agent, identity, checks));
      await checks.group('OTA after the reboot', () => otaKeptAcrossReboot(agent, checks));
      await checks.group('tiny-llm after the reboot', () => llmAnswers(agent, checks, 'after the reboot'));
      await checks.group('after the reboot, systemd', () =>
        noRestartBySystemd(g, checks, 'after the reboot'),
      );
    }
  } catch (err) {
    checks.check('system tier', false, (err as Error).message);
    if (guest && existsSync(guest.console))
      console.error(readFileSync(guest.console, 'utf8').split('\n').slice(-60).join('\n'));
  } finally {
    if (guest && checks.failed().length > 0) await printAgentRecord(guest);
    guest?.kill();
    await guest?.exited;
    await lock?.release();
    await ota?.close();
    if (process.env['MNN_EDGE_SYSTEM_KEEP']) say(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
  const failed = checks.failed();
  say(`${checks.results.length - failed.length} of ${checks.results.length} checks passed`);
  if (failed.length > 0) process.exit(1);
}

await main();
