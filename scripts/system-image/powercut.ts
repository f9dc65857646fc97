// Power cuts under write load on the booted arm64 guest (issue 43, item 3). SIGKILL of QEMU is a power cut for
// the guest: whatever it had not flushed to its virtual disk is gone (the disks run with cache=writeback, QEMU's
// default: a guest flush reaches the host file, an unflushed write dies with QEMU's process, as with a real
// disk's volatile cache; never cache=unsafe, which would ignore the guest's flushes).
//
// One run: boot once (the first boot installs the packages), point the agent's telemetry at a mosquitto on the
// host, then per cut: start the write load (settings changes through the HTTP API; telemetry into the SQLite
// outbox and out to the broker), cut at a random moment, boot again and check (powercut-checks.ts). The machine's
// QEMU lock is held for a batch of cuts at a time and released between batches while the guest is down.
//
//   npx tsx scripts/system-image/powercut.ts [--cuts N]      (exit 1 when any check fails)
//   npm run bench -- powercut                                 (50 cuts, figures per kind of write)
//   runPowercuts({ cuts: 3 })                                 (the system tier's subset)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BOOT_BUDGET_MS,
  boot,
  debsDisk,
  ensureImage,
  freePort,
  type Guest,
  healthz,
  needTools,
  sh,
} from './guest.js';
import { guestExec, waitForGuestAgent } from './guest-agent.js';
import {
  checkSettings,
  checkTelemetry,
  DATA_DIR,
  type IntegrityResult,
  integrity,
  type SettingsCheck,
  seqFaults,
  type TelemetryCheck,
} from './powercut-checks.js';
import { type FullDiskResult, fullDiskCheck, fullDiskImage } from './powercut-fulldisk.js';
import { startBroker, TelemetryRecorder } from './powercut-host.js';
import { type AckedSetting, apiReady, startSettingsLoad } from './powercut-load.js';
import { type HeldLock, takeQemuLock } from './qemu-lock.js';

/** The documented defaults for the loss window (telemetry.outbox.flushIntervalMs); telemetry once a second so
 *  that a cut always has messages in flight. */
export const TELEMETRY = { flushIntervalMs: 5_000, publishIntervalMs: 1_000, sampleIntervalMs: 500 };

export interface CutResult {
  cut: number;
  /** Seconds of write load before the cut. */
  loadS: number;
  bootS: number;
  serves: boolean;
  settings?: SettingsCheck;
  settingsSent: number;
  settingsRefused: string[];
  telemetry?: TelemetryCheck;
  integrity: IntegrityResult[];
  error?: string;
}

export interface PowercutReport {
  cuts: CutResult[];
  telemetryReceived: number;
  reusedSeq: number[];
  seqGaps: number[];
  fullDisk?: FullDiskResult;
  /** One line per kind of write and one verdict. */
  lines: string[];
  ok: boolean;
}

export interface PowercutOptions {
  cuts: number;
  /** Cuts per hold of the QEMU lock (default 5). */
  batch?: number;
  log?: (line: string) => void;
  /** After the cuts, the full-disk case (powercut-fulldisk.ts); default true. */
  fullDisk?: boolean;
}

const defaultLog = (line: string) => console.log(`powercut: ${line}`);

async function guestClockOffset(guest: Guest): Promise<{ offsetMs: number; errMs: number }> {
  const before = Date.now();
  const r = await guestExec(guest.qga, 'date +%s%3N', 30_000);
  const after = Date.now();
  return { offsetMs: Number(r.stdout.trim()) - (before + after) / 2, errMs: (after - before) / 2 };
}

/**
 * MNN_EDGE_POWERCUT_DIST: a `dist/` built from this checkout (`npm run build`) replaces the installed agent's
 * bundle (dist/agent/cli) in the guest, a development shortcut to try a fix without rebuilding the packages and
 * reinstalling them (the first boot's 20 min under TCG). CI and the bench install the packages under test.
 */
async function replaceAgentBundle(guest: Guest, dist: string, log: (line: string) => void): Promise<void> {
  const tgz = spawnSync('tar', ['czf', '-', '-C', join(dist, 'agent'), 'cli'], { maxBuffer: 64 << 20 });
  if (tgz.status !== 0) throw new Error(`tar of ${dist}/agent/cli failed: ${tgz.stderr}`);
  const b64 = tgz.stdout.toString('base64');
  await sh(guest, 'rm -f /tmp/agent-cli.b64');
  // One argument stays under Linux's 128 KiB limit per string.
  for (let at = 0; at < b64.length; at += 60_000)
    await sh(guest, `printf %s ${b64.slice(at, at + 60_000)} >>/tmp/agent-cli.b64`);
  await sh(
    guest,
    `set -e; d=/usr/lib/node_modules/mnn-edge/dist/agent; rm -rf /tmp/agent-cli; mkdir /tmp/agent-cli
     base64 -d /tmp/agent-cli.b64 | tar xzf - -C /tmp/agent-cli; rm -rf $d/cli; mv /tmp/agent-cli/cli $d/cli; sync`,
  );
  log(
    `replaced the installed agent's bundle by ${dist}/agent/cli (${(tgz.stdout.length / 1024).toFixed(0)} KiB)`,
  );
}

/** Points the agent at the host's broker with telemetry once a second, and restarts it. */
async function configureAgent(guest: Guest, brokerPort: number): Promise<void> {
  const config = JSON.parse(await sh(guest, 'cat /etc/mnn-edge/agent.json')) as Record<string, unknown>;
  const mqtt = (config['mqtt'] ?? {}) as Record<string, unknown>;
  config['mqtt'] = {
    ...mqtt,
    url: `mqtt://10.0.2.2:${brokerPort}`,
    embeddedBroker: { ...((mqtt['embeddedBroker'] as object | undefined) ?? {}), enabled: false },
  };
  config['telemetry'] = {
    sampleIntervalMs: TELEMETRY.sampleIntervalMs,
    publishIntervalMs: TELEMETRY.publishIntervalMs,
    outbox: { flushIntervalMs: TELEMETRY.flushIntervalMs },
  };
  const b64 = Buffer.from(`${JSON.stringify(config, null, 2)}\n`).toString('base64');
  await sh(
    guest,
    `echo ${b64} | base64 -d >/etc/mnn-edge/agent.json && sync && systemctl restart --no-block mnn-edge`,
  );
}

async function bootAndWait(
  image: string,
  work: string,
  debs: string | undefined,
  drives: string[],
  log: (line: string) => void,
): Promise<{ guest: Guest; seconds: number }> {
  const port = await freePort();
  const started = Date.now();
  const guest = boot(image, work, debs, port, { drives });
  await Promise.race([
    healthz(port, BOOT_BUDGET_MS),
    guest.exited.then((code) => {
      throw new Error(`QEMU exited (${code}) before /healthz answered; console: ${guest.console}`);
    }),
  ]);
  await waitForGuestAgent(guest.qga, 5 * 60_000);
  const seconds = (Date.now() - started) / 1000;
  log(`booted to /healthz in ${seconds.toFixed(0)} s (port ${port}${debs ? ', packages installed' : ''})`);
  return { guest, seconds };
}

/** The checks once the guest is back: every database, every acknowledged change, the telemetry around the cut. */
async function checkAfterCut(
  guest: Guest,
  token: string,
  result: CutResult,
  acked: AckedSetting[],
  recorder: TelemetryRecorder,
  cut: { hostMs: number; offsetMs: number; offsetErrMs: number },
): Promise<void> {
  result.integrity = await integrity(guest);
  result.settings = await checkSettings(guest.port, token, acked);
  const cutGuest = cut.hostMs + cut.offsetMs;
  // The outbox drains in seq order: once a message made after the cut has arrived, all that survived it have.
  await waitFor('telemetry produced after the cut at the host broker', 5 * 60_000, () =>
    recorder.messages.some((m) => m.ts > cutGuest),
  );
  result.telemetry = checkTelemetry(recorder.messages, cut, TELEMETRY);
}

function fullDiskUnfinished(err: unknown): FullDiskResult {
  return {
    status: 0,
    body: '',
    clear: false,
    nothingLost: false,
    servedWhileFull: false,
    recovered: false,
    integrity: '',
    integrityOk: false,
    details: [`the full-disk case did not run to its end: ${(err as Error).message}`],
  };
}

async function waitFor(what: string, budgetMs: number, done: () => boolean): Promise<void> {
  const deadline = Date.now() + budgetMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${budgetMs / 1000} s`);
    await sleep(1000);
  }
}

export async function runPowercuts(options: PowercutOptions): Promise<PowercutReport | undefined> {
  const log = options.log ?? defaultLog;
  const image = ensureImage();
  if (image === undefined) return undefined;
  needTools();
  const batch = options.batch ?? 5;
  // MNN_EDGE_POWERCUT_WORK: a work folder to keep and reuse (with MNN_EDGE_SYSTEM_KEEP); once its guest has
  // installed the packages, later runs skip that first boot (20 min under TCG on a busy machine).
  const reuse = process.env['MNN_EDGE_POWERCUT_WORK'];
  if (reuse) mkdirSync(reuse, { recursive: true });
  const work = reuse ?? mkdtempSync(join(tmpdir(), 'mnn-edge-powercut-'));
  const installedMarker = join(work, 'installed');
  const broker = await startBroker(work);
  const recorder = new TelemetryRecorder();
  await recorder.start(broker.port);
  const cuts: CutResult[] = [];
  let lock: HeldLock | undefined;
  let guest: Guest | undefined;
  let fullDisk: FullDiskResult | undefined;
  try {
    const installed = existsSync(installedMarker);
    const debs = installed ? undefined : debsDisk(work);
    const drives = [existsSync(join(work, 'full.ext4')) ? join(work, 'full.ext4') : fullDiskImage(work)];
    lock = await takeQemuLock(log);
    let booted = await bootAndWait(image, work, debs, drives, log);
    guest = booted.guest;
    writeFileSync(installedMarker, '');
    const token = (await sh(guest, `cat ${DATA_DIR}/pairing-token`)).trim();
    const dist = process.env['MNN_EDGE_POWERCUT_DIST'];
    if (dist) await replaceAgentBundle(guest, dist, log);
    await configureAgent(guest, broker.port);
    await healthz(guest.port, BOOT_BUDGET_MS);
    await apiReady(guest.port, token);
    await waitFor(
      'telemetry from the guest at the host broker',
      5 * 60_000,
      () => recorder.messages.length > 0,
    );
    log(`telemetry flows (seq ${recorder.messages[0]?.seq}); cutting ${options.cuts} times`);
    let nextN = 1;
    for (let i = 1; i <= options.cuts; i++) {
      const current: Guest = guest;
      const loadMs = 3_000 + Math.floor(Math.random() * 17_000);
      const load = startSettingsLoad(current.port, token, nextN);
      const loadStarted = Date.now();
      await sleep(loadMs);
      const { offsetMs, errMs } = await guestClockOffset(current);
      const cutHostMs = Date.now();
      current.kill();
      await current.exited;
      await load.stop();
      nextN += load.sent;
      const loadS = (cutHostMs - loadStarted) / 1000;
      log(
        `cut ${i}: after ${loadS.toFixed(1)} s of load (${load.acked.length} settings changes acknowledged)`,
      );
      if (i % batch === 0 && i < options.cuts) {
        await lock.release();
        lock = await takeQemuLock(log);
      }
      const result: CutResult = {
        cut: i,
        loadS,
        bootS: 0,
        serves: false,
        settingsSent: load.sent,
        settingsRefused: load.refused,
        integrity: [],
      };
      cuts.push(result);
      try {
        booted = await bootAndWait(image, work, undefined, drives, log);
        guest = booted.guest;
        result.bootS = booted.seconds;
        await apiReady(guest.port, token);
        result.serves = true;
        await checkAfterCut(guest, token, result, load.acked, recorder, {
          hostMs: cutHostMs,
          offsetMs,
          offsetErrMs: errMs,
        });
        log(`cut ${i}: ${describeCut(result)}`);
      } catch (err) {
        result.error = (err as Error).message;
        log(`cut ${i}: FAIL ${result.error}`);
        const consoleLog = guest?.console;
        if (consoleLog && existsSync(consoleLog))
          log(readFileSync(consoleLog, 'utf8').split('\n').slice(-40).join('\n'));
        break;
      }
    }
    if ((options.fullDisk ?? true) && cuts.every((c) => c.error === undefined) && guest !== undefined) {
      fullDisk = await fullDiskCheck(guest, token, log).catch(fullDiskUnfinished);
    }
  } finally {
    guest?.kill();
    await guest?.exited;
    await lock?.release();
    await recorder.stop();
    await broker.stop();
    if (process.env['MNN_EDGE_SYSTEM_KEEP']) {
      writeFileSync(join(work, 'telemetry.json'), JSON.stringify(recorder.messages));
      log(`kept ${work}`);
    } else rmSync(work, { recursive: true, force: true });
  }
  return summarize(cuts, recorder.messages.length, seqFaults(recorder.messages), fullDisk);
}

function describeCut(r: CutResult): string {
  const bad = r.integrity.filter((d) => d.result !== 'ok');
  const t = r.telemetry;
  return [
    `boot ${r.bootS.toFixed(0)} s`,
    `integrity ${bad.length === 0 ? `ok (${r.integrity.length} databases)` : bad.map((d) => `${d.db}: ${d.result}`).join('; ')}`,
    `settings ${r.settings?.acked ?? 0} acknowledged, ${r.settings?.lost.length ?? '?'} lost${r.settings?.lost.length ? ` (${r.settings.lost.join('; ')})` : ''}`,
    t
      ? `telemetry lost ${(t.lostMs / 1000).toFixed(1)} s (±${(t.offsetErrMs / 1000).toFixed(1)}) of a ${t.window / 1000} s window, ${t.duplicates} duplicates (${t.duplicatesBeyondWindow} beyond the window)`
      : 'telemetry unchecked',
  ].join('; ');
}

export function summarize(
  cuts: CutResult[],
  telemetryReceived: number,
  faults: { reused: number[]; gaps: number[] },
  fullDisk?: FullDiskResult,
): PowercutReport {
  const checked = cuts.filter((c) => c.error === undefined);
  const acked = checked.reduce((s, c) => s + (c.settings?.acked ?? 0), 0);
  const lost = checked.reduce((s, c) => s + (c.settings?.lost.length ?? 0), 0);
  const refused = cuts.reduce((s, c) => s + c.settingsRefused.length, 0);
  const telem = checked.flatMap((c) => (c.telemetry ? [c.telemetry] : []));
  const maxLost = telem.reduce((m, t) => Math.max(m, t.lostMs), 0);
  const beyondWindow = telem.filter((t) => !t.withinWindow).length;
  const dups = telem.reduce((s, t) => s + t.duplicates, 0);
  const dupsBeyond = telem.reduce((s, t) => s + t.duplicatesBeyondWindow, 0);
  const dbs = checked.reduce((s, c) => s + c.integrity.length, 0);
  const integrityFailures = checked.reduce(
    (s, c) => s + c.integrity.filter((d) => d.result !== 'ok').length,
    0,
  );
  const problems = checked.filter((c) => c.settings?.problem).length;
  const failedCuts = cuts.filter((c) => c.error !== undefined);
  const lines = [
    `cuts: ${cuts.length} (${failedCuts.length} where the guest did not come back to be checked${failedCuts.length ? `: ${failedCuts.map((c) => `cut ${c.cut}: ${c.error}`).join('; ')}` : ''})`,
    `settings (HTTP PATCH /api/config): ${checked.length} cuts, ${acked} acknowledged, ${lost} lost (target 0), ${refused} refused while up, ${problems} cuts with a damaged overlay`,
    `telemetry (SQLite outbox → MQTT): ${telem.length} cuts, ${telemetryReceived} messages received, worst loss ${(maxLost / 1000).toFixed(1)} s against a ${(TELEMETRY.flushIntervalMs + TELEMETRY.publishIntervalMs) / 1000} s window (flushIntervalMs + publishIntervalMs), ${beyondWindow} cuts beyond it (target 0), ${dups} duplicates (${dupsBeyond} beyond the window, target 0), ${faults.reused.length} seq numbers reused for another message (target 0), ${faults.gaps.length} seq gaps (target 0)`,
    `sqlite (${DATA_DIR}): ${dbs} integrity checks, ${integrityFailures} failures (target 0)`,
    ...(fullDisk
      ? [
          `full disk (settings change on a filled ${DATA_DIR}): HTTP ${fullDisk.status} ${fullDisk.body}; clear error ${fullDisk.clear ? 'yes' : 'NO'}, nothing lost ${fullDisk.nothingLost ? 'yes' : 'NO'}, served while full ${fullDisk.servedWhileFull ? 'yes' : 'NO'}, changes work once space returns ${fullDisk.recovered ? 'yes' : 'NO'}; integrity ${fullDisk.integrity}; ${fullDisk.details.join('; ')}`,
        ]
      : []),
  ];
  const fullDiskOk =
    fullDisk === undefined ||
    (fullDisk.clear &&
      fullDisk.nothingLost &&
      fullDisk.servedWhileFull &&
      fullDisk.recovered &&
      fullDisk.integrityOk);
  const ok =
    cuts.length > 0 &&
    failedCuts.length === 0 &&
    lost === 0 &&
    refused === 0 &&
    problems === 0 &&
    beyondWindow === 0 &&
    dupsBeyond === 0 &&
    faults.reused.length === 0 &&
    faults.gaps.length === 0 &&
    integrityFailures === 0 &&
    fullDiskOk;
  return {
    cuts,
    telemetryReceived,
    reusedSeq: faults.reused,
    seqGaps: faults.gaps,
    ...(fullDisk ? { fullDisk } : {}),
    lines,
    ok,
  };
}

if (process.argv[1] === import.meta.filename) {
  const i = process.argv.indexOf('--cuts');
  const count = i > 0 ? Number(process.argv[i + 1]) : 3;
  const report = await runPowercuts({ cuts: count });
  if (report === undefined) process.exit(0);
  for (const line of report.lines) defaultLog(line);
  defaultLog(report.ok ? 'PASS' : 'FAIL');
  process.exit(report.ok ? 0 : 1);
}
