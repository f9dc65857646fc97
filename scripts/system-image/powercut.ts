import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
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
} from './guest.js';
import { waitForGuestAgent } from './guest-agent.js';
import {
  type AtCut,
  checkSettings,
  checkTelemetry,
  integrity,
  readAtCut,
  seqFaults,
} from './powercut-checks.js';
import { type FullDiskResult, fullDiskCheck, fullDiskImage } from './powercut-fulldisk.js';
import { startBroker, TelemetryRecorder } from './powercut-host.js';
import { type AckedSetting, apiReady, startSettingsLoad } from './powercut-load.js';
import { checkModelsAfterCut, ModelHost } from './powercut-models.js';
import { prepareGuest, waitFor } from './powercut-prepare.js';
import {
  keyDifference,
  PowercutRecord,
  packagesKey,
  RecordRefused,
  recordFileName,
} from './powercut-record.js';
import { type CutResult, describeCut, type PowercutReport, summarize, TELEMETRY } from './powercut-report.js';
import { type HeldLock, takeQemuLock } from './qemu-lock.js';

export { type CutResult, type PowercutReport, summarize, TELEMETRY } from './powercut-report.js';

export interface PowercutOptions {
  cuts: number;
  /** Cuts per hold of the QEMU lock (default 5). */
  batch?: number;
  log?: (line: string) => void;
  /** After the cuts, the full-disk case (powercut-fulldisk.ts); default true. */
  fullDisk?: boolean;
  /** Host clock (ms) by which the guest must be down: no cut starts that would not be checked before it (the
   *  longest cut so far is the estimate), and the guest is killed there whatever it is doing. */
  deadlineMs?: number;
  /** The resumable record (powercut-record.ts): a file, or a folder for a file named by the packages and the
   *  image. Every checked cut is appended; with `resume`, the record's cuts count toward `cuts`, and the
   *  summary is over all of them. */
  record?: { path: string; resume: boolean };
}

/** A cut's whole cycle before one has been timed: load, boot (3–4 min under TCG), the checks. */
const FIRST_CYCLE_ESTIMATE_MS = 8 * 60_000;
/** The full-disk case: a restart of the agent on the small disk, and a few changes. */
const FULL_DISK_ESTIMATE_MS = 6 * 60_000;

const defaultLog = (line: string) => console.log(`powercut: ${line}`);

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

/** The checks once the guest is back: the agent serves, every database, every acknowledged change, the telemetry around the cut. */
async function checkAfterCut(
  guest: Guest,
  token: string,
  result: CutResult,
  acked: AckedSetting[],
  recorder: TelemetryRecorder,
  cut: AtCut,
): Promise<void> {
  await apiReady(guest.port, token);
  result.serves = true;
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

function failedCut(
  result: CutResult,
  err: unknown,
  guest: Guest | undefined,
  log: (l: string) => void,
): void {
  result.error = (err as Error).message;
  log(`cut ${result.cut}: FAIL ${result.error}`);
  const consoleLog = guest?.console;
  if (consoleLog && existsSync(consoleLog))
    log(readFileSync(consoleLog, 'utf8').split('\n').slice(-40).join('\n'));
}

export async function runPowercuts(options: PowercutOptions): Promise<PowercutReport | undefined> {
  const log = options.log ?? defaultLog;
  const image = ensureImage();
  if (image === undefined) return undefined;
  needTools();
  const batch = options.batch ?? 5;
  const { work, reuse, installedMarker, installed, debs } = workFolder();
  const record = options.record && openRecord(options.record, image, work, installed, log);
  const done = record?.cuts.length ?? 0;
  if (record && done >= options.cuts && (record.fullDisk() || options.fullDisk === false)) {
    log(`the record already holds ${done} cuts and the full-disk case: nothing to run`);
    return summarize({ cuts: record.cuts, sittings: record.sittings(), fullDisk: record.fullDisk() });
  }
  const broker = await startBroker(work);
  const recorder = new TelemetryRecorder();
  await recorder.start(broker.port);
  const models = new ModelHost(work);
  await models.start(broker.port);
  const deadlineMs = options.deadlineMs ?? Number.POSITIVE_INFINITY;
  let hardStop: NodeJS.Timeout | undefined;
  const cuts: CutResult[] = [];
  let lock: HeldLock | undefined;
  let guest: Guest | undefined;
  let fullDisk: FullDiskResult | undefined;
  const sitting = () => ({ received: recorder.messages.length, ...seqFaults(recorder.messages) });
  try {
    const drives = [existsSync(join(work, 'full.ext4')) ? join(work, 'full.ext4') : fullDiskImage(work)];
    lock = await takeQemuLock(log);
    if (Number.isFinite(deadlineMs))
      hardStop = setTimeout(() => guest?.kill(), Math.max(0, deadlineMs - Date.now()));
    let booted = await bootAndWait(image, work, debs, drives, log);
    guest = booted.guest;
    writeFileSync(installedMarker, '');
    const { token, deviceId, firstSeq } = await prepareGuest(guest, broker.port, models, recorder, log);
    log(
      `telemetry flows (seq ${firstSeq}); cutting ${options.cuts - done} times${done ? ` (the record holds ${done})` : ''}`,
    );
    // Settings tags and OTA versions go on from the record's: every cut's are new to the guest.
    let nextN = 1 + (record?.settingsSent() ?? 0);
    let longestCycleMs = FIRST_CYCLE_ESTIMATE_MS;
    for (let i = done + 1; i <= options.cuts; i++) {
      if (Date.now() + longestCycleMs > deadlineMs) {
        log(
          `stopping before cut ${i}: another cut (up to ${(longestCycleMs / 60_000).toFixed(1)} min) would pass the deadline`,
        );
        break;
      }
      const cycleStarted = Date.now();
      const on = { guest, token, deviceId, models, log };
      const { load, writes, atCut, result } = await cutUnderLoad(on, i, nextN);
      nextN += load.sent;
      if (i % batch === 0 && i < options.cuts) {
        await lock.release();
        lock = await takeQemuLock(log);
      }
      if (Date.now() >= deadlineMs) {
        log(`cut ${i}: the deadline has passed, the guest is not booted again; not counted`);
        break;
      }
      cuts.push(result);
      try {
        booted = await bootAndWait(image, work, undefined, drives, log);
        guest = booted.guest;
        result.bootS = booted.seconds;
        await checkAfterCut(guest, token, result, load.acked, recorder, atCut);
        result.models = await checkModelsAfterCut(guest, token, models, writes);
        log(`cut ${i}: ${describeCut(result)}`);
        longestCycleMs = Math.max(longestCycleMs, Date.now() - cycleStarted);
      } catch (err) {
        if (Date.now() >= deadlineMs) {
          // The run's own stop, not the system's failure: not counted, and a resumed record cuts it again.
          cuts.pop();
          log(`cut ${i}: the deadline stopped its checks; not counted`);
          break;
        }
        failedCut(result, err, guest, log);
        record?.addCut(result, sitting());
        break;
      }
      record?.addCut(result, sitting());
    }
    const fullDiskFits = Date.now() + FULL_DISK_ESTIMATE_MS < deadlineMs;
    if (!fullDiskFits) log('the full-disk case does not fit before the deadline: skipped');
    if ((options.fullDisk ?? true) && fullDiskFits && cuts.every((c) => !c.error) && guest) {
      fullDisk = await fullDiskCheck(guest, token, log).catch(fullDiskUnfinished);
      record?.addFullDisk(fullDisk);
    }
  } finally {
    clearTimeout(hardStop);
    guest?.kill();
    await guest?.exited;
    await lock?.release();
    // A folder given to be reused is kept: a resumed record needs its installed guest.
    const keep = Boolean(process.env['MNN_EDGE_SYSTEM_KEEP'] || reuse);
    await endSitting(work, keep, models, recorder, broker, log);
  }
  // With a record, the summary is over every sitting's cuts.
  const all = record ? { cuts: record.cuts, sittings: record.sittings() } : { cuts, sittings: [sitting()] };
  const lastFullDisk = fullDisk ?? record?.fullDisk();
  return summarize({ ...all, asked: options.cuts, ...(lastFullDisk ? { fullDisk: lastFullDisk } : {}) });
}

/** The host's side down once the guest is: the servers, the broker, and the work folder kept (with the
 *  telemetry recorded) or removed. */
async function endSitting(
  work: string,
  keep: boolean,
  models: ModelHost,
  recorder: TelemetryRecorder,
  broker: { stop: () => Promise<void> },
  log: (line: string) => void,
): Promise<void> {
  await models.close();
  await recorder.stop();
  await broker.stop();
  if (keep) {
    writeFileSync(join(work, 'telemetry.json'), JSON.stringify(recorder.messages));
    log(`kept ${work}`);
  } else rmSync(work, { recursive: true, force: true });
}

/** MNN_EDGE_POWERCUT_WORK: a work folder to reuse, and keep; once its guest has installed the packages, later
 *  runs skip that first boot (20 min under TCG on a busy machine). Otherwise a fresh one, removed at the end. */
function workFolder() {
  const reuse = process.env['MNN_EDGE_POWERCUT_WORK'];
  if (reuse) mkdirSync(reuse, { recursive: true });
  const work = reuse ?? mkdtempSync(join(tmpdir(), 'mnn-edge-powercut-'));
  const installedMarker = join(work, 'installed');
  const installed = existsSync(installedMarker);
  return { work, reuse, installedMarker, installed, debs: installed ? undefined : debsDisk(work) };
}

/** One cut: the settings load and the model writes started, a random 3–35 s, the agent's state and the guest's
 *  clock read, and QEMU killed; the cut's result, to be filled by the checks. */
async function cutUnderLoad(
  on: { guest: Guest; token: string; deviceId: string; models: ModelHost; log: (line: string) => void },
  i: number,
  firstTag: number,
) {
  const { guest, token, deviceId, models, log } = on;
  const loadMs = 3_000 + Math.floor(Math.random() * 32_000);
  // 24–96 KiB/s: the 0.5 MB model takes 5–20 s to arrive, so cuts land in downloads, installs and after.
  models.setRate((24 + Math.floor(Math.random() * 72)) * 1024);
  const load = startSettingsLoad(guest.port, token, firstTag);
  const loadStarted = Date.now();
  const writes = await models.startWrites(i, deviceId, guest.port, token);
  await sleep(Math.max(0, loadMs - (Date.now() - loadStarted)));
  const read = await readAtCut(guest, token);
  const atCut: AtCut = { ...read, hostMs: Date.now() };
  guest.kill();
  await guest.exited;
  await load.stop();
  await writes.stop();
  const loadS = (atCut.hostMs - loadStarted) / 1000;
  log(`cut ${i}: after ${loadS.toFixed(1)} s of load (${load.acked.length} settings changes acknowledged)`);
  const result: CutResult = {
    cut: i,
    loadS,
    bootS: 0,
    serves: false,
    settingsSent: load.sent,
    settingsRefused: load.refused,
    integrity: [],
  };
  return { load, writes, atCut, result };
}

/**
 * The run's record, refused before the guest boots when it does not fit: the packages are those the work
 * folder's guest installed (its debs/), and a folder given to be reused must not be asked to run other ones.
 */
function openRecord(
  opt: { path: string; resume: boolean },
  image: string,
  work: string,
  installed: boolean,
  log: (line: string) => void,
): PowercutRecord {
  if (process.env['MNN_EDGE_POWERCUT_DIST'])
    throw new RecordRefused(
      'a record is of installed packages: MNN_EDGE_POWERCUT_DIST replaces the agent, run it without --record',
    );
  const key = { packages: packagesKey(join(work, 'debs')), image: basename(image) };
  const given = process.env['MNN_EDGE_SYSTEM_DEBS'];
  if (installed && given) {
    const differs = keyDifference({ packages: packagesKey(given), image: key.image }, key);
    if (differs)
      throw new RecordRefused(
        `the guest in ${work} has other packages installed than ${given} (${differs}): give another MNN_EDGE_POWERCUT_WORK`,
      );
  }
  const folder = opt.path.endsWith('/') || (existsSync(opt.path) && statSync(opt.path).isDirectory());
  const path = folder ? join(opt.path, recordFileName(key)) : opt.path;
  const record = PowercutRecord.open(path, key, opt.resume);
  log(`record ${path}: ${record.cuts.length} cuts held, sitting ${record.sitting}`);
  return record;
}

/** HH:MM (UTC) as the next such moment, today or tomorrow, in ms; refused when it is not HH:MM. */
export function deadlineAt(hhmm: string): number {
  const m = /^(\d\d):(\d\d)$/.exec(hhmm);
  if (!m) throw new Error(`a deadline is HH:MM (UTC), not ${JSON.stringify(hhmm)}`);
  const at = new Date();
  at.setUTCHours(Number(m[1]), Number(m[2]), 0, 0);
  return at.getTime() < Date.now() - 12 * 3_600_000 ? at.getTime() + 86_400_000 : at.getTime();
}

if (process.argv[1] === import.meta.filename) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? (process.argv[i + 1] ?? '') : undefined;
  };
  const count = Number(arg('--cuts') ?? 3);
  // --deadline HH:MM (UTC, today or tomorrow): the guest is down by then (a shared machine's QEMU lock).
  const deadline = arg('--deadline');
  const recordPath = arg('--record');
  const resume = process.argv.includes('--resume');
  if (resume && recordPath === undefined) throw new Error('--resume continues a --record FILE or FOLDER');
  let report: PowercutReport | undefined;
  try {
    report = await runPowercuts({
      cuts: count,
      ...(deadline !== undefined ? { deadlineMs: deadlineAt(deadline) } : {}),
      ...(recordPath !== undefined ? { record: { path: recordPath, resume } } : {}),
    });
  } catch (err) {
    if (!(err instanceof RecordRefused)) throw err;
    defaultLog(`refused: ${err.message}`);
    process.exit(2);
  }
  if (report === undefined) process.exit(0);
  for (const line of report.lines) defaultLog(line);
  defaultLog(report.verdict);
  process.exit(report.ok ? 0 : 1);
}
