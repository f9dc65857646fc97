// The device side of OTA: a state machine per job, driven from the SQLite journal.
//
//   queued → downloading → installing → staged → activating → health-check → succeeded
//      ↘ rejected(reason)     ↘ failed(reason)                  ↘ rolled-back(reason)
//
// Each state is written before its step runs and each step can be redone, so a restart (or a power cut)
// resumes the oldest unfinished job where it stopped. Jobs are idempotent by id: a job id seen before is
// answered with its recorded status, never run twice. One job runs at a time, in arrival order.

import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Clock, systemClock } from '../../lib/clock.js';
import type { Downloader } from '../../lib/download/downloader.js';
import { errorMessage, MnnEdgeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { ActivationPort, HealthProbe } from '../../lib/ota-ports.js';
import { formatSchemaErrors, validate } from '../../lib/schema.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
import { isRejection, OtaRejection } from '../trust/rejection.js';
import { type DeviceFacts, selectTarget } from '../trust/targets.js';
import type { TimeSource } from '../trust/timestamps.js';
import type { TrustStore } from '../trust/trust.js';
import { type HealthPolicy, judgeHealth } from './health-gate.js';
import { isTerminal, type JobStatus, type OtaJob, otaJobSchema, type RollbackReason } from './job.js';
import type { JobJournal, JournalEntry } from './journal.js';
import type { PackageInstaller } from './ports.js';

export interface JobRunnerDeps {
  facts: DeviceFacts;
  journal: JobJournal;
  trust: TrustStore;
  downloader: Downloader;
  installer: PackageInstaller;
  activation: ActivationPort;
  probe: HealthProbe;
  stagingDir: string;
  health: HealthPolicy;
  time: Pick<TimeSource, 'trustedNow'>;
  logger: Logger;
  /** Minimum spacing of `downloading` progress reports (and journal writes). */
  progressIntervalMs?: number;
  clock?: Clock;
}

export type JobRunnerEvents = { status: JobStatus };

export class JobRunner extends TypedEventEmitter<JobRunnerEvents> {
  readonly #d: JobRunnerDeps;
  #loop: Promise<void> | undefined;
  #abort = new AbortController();
  #stopped = false;

  constructor(deps: JobRunnerDeps) {
    super();
    this.#d = deps;
  }

  /** Resumes unfinished jobs from the journal. */
  start(): void {
    this.#stopped = false;
    this.#kick();
  }

  /** Interrupts the running step (it resumes on the next start) and waits for the loop to stop. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort(new MnnEdgeError('EABORT', 'OTA runner stopped'));
    await this.#loop;
    this.#abort = new AbortController();
  }

  /** Resolves when no job is left to run. */
  async idle(): Promise<void> {
    while (this.#loop) await this.#loop;
  }

  /** A job as received from MQTT (or the CLI). Returns the status it now has. */
  submit(raw: unknown): JobStatus | undefined {
    const errors = validate(otaJobSchema, raw);
    if (errors.length > 0) {
      const partial = raw as Partial<OtaJob> | undefined;
      const message = `Invalid OTA job: ${formatSchemaErrors(errors)}`;
      this.#d.logger.warn('ota job refused', { message });
      if (typeof partial?.jobId === 'string' && typeof partial.package?.id === 'string') {
        const status: JobStatus = {
          jobId: partial.jobId,
          deviceId: this.#d.facts.deviceId,
          state: 'rejected',
          reason: 'malformed',
          message,
          package: { id: partial.package.id, version: String(partial.package.version ?? '') },
          ts: this.#d.time.trustedNow(),
        };
        this.emit('status', status);
        return status;
      }
      return undefined;
    }
    const job = raw as OtaJob;
    const known = this.#d.journal.get(job.jobId);
    if (known) {
      // A retained or re-sent job: say where it stands, do nothing else.
      return this.#report(known);
    }
    const entry = this.#d.journal.insert(job);
    if (!entry) return undefined;
    this.#d.logger.info('ota job queued', { jobId: job.jobId, package: job.package });
    const status = this.#report(entry);
    this.#kick();
    return status;
  }

  status(jobId: string): JobStatus | undefined {
    const e = this.#d.journal.get(jobId);
    return e ? this.#statusOf(e) : undefined;
  }

  #kick(): void {
    if (this.#loop || this.#stopped) return;
    this.#loop = this.#drain().finally(() => {
      this.#loop = undefined;
      // A job submitted while the loop was finishing would otherwise wait for the next submit.
      if (!this.#stopped && this.#d.journal.nextUnfinished()) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    for (;;) {
      if (this.#stopped) return;
      const entry = this.#d.journal.nextUnfinished();
      if (!entry) return;
      await this.#run(entry);
    }
  }

  async #run(start: JournalEntry): Promise<void> {
    let entry = start;
    const signal = this.#abort.signal;
    try {
      while (!isTerminal(entry.state)) {
        entry = await this.#step(entry, signal);
        this.#report(entry);
      }
    } catch (err) {
      if (signal.aborted) return;
      entry = await this.#fail(this.#d.journal.get(entry.jobId) ?? entry, err);
      this.#report(entry);
    }
    this.#cleanStaging(entry);
  }

  async #step(e: JournalEntry, signal: AbortSignal): Promise<JournalEntry> {
    const { journal } = this.#d;
    const { id, version } = e.job.package;
    switch (e.state) {
      case 'queued': {
        // Signatures, version and expiry are checked, and only then is the document remembered as trusted.
        const verified = this.#d.trust.accept(e.job.targets);
        const sel = selectTarget(verified.body, id, version, this.#d.facts, e.job.package.variant);
        if (typeof sel === 'string') throw new OtaRejection('no-target', sel);
        const url = new URL(sel.artifact.name, e.job.baseUrl).toString();
        return journal.update(e.jobId, {
          state: 'downloading',
          artifact: sel.artifact,
          url,
          bytesDone: 0,
          bytesTotal: sel.artifact.length,
        });
      }
      case 'downloading': {
        const artifact = e.artifact!;
        mkdirSync(this.#d.stagingDir, { recursive: true });
        let lastReport = Number.NEGATIVE_INFINITY;
        const every = this.#d.progressIntervalMs ?? 1000;
        const clock = this.#d.clock ?? systemClock;
        const off = this.#d.downloader.on('progress', (p) => {
          const now = clock.monotonicMs();
          if (now - lastReport < every || p.done === p.total) return;
          lastReport = now;
          this.#report(journal.update(e.jobId, { bytesDone: p.done }));
        });
        try {
          await this.#d.downloader.fetch(
            { url: e.url!, dest: this.#stagedPath(e), length: artifact.length, sha256: artifact.sha256 },
            { signal, extraBytes: artifact.length },
          );
        } finally {
          off();
        }
        return journal.update(e.jobId, { state: 'installing', bytesDone: artifact.length });
      }
      case 'installing': {
        const tarball = this.#stagedPath(e);
        if (!existsSync(tarball)) return journal.update(e.jobId, { state: 'downloading' });
        await this.#d.installer.install(tarball, { id, version }, signal);
        return journal.update(e.jobId, { state: 'staged' });
      }
      case 'staged': {
        const previous = await this.#d.activation.activeVersion(id);
        if (previous !== undefined && previous !== version && !journal.healthOf(id, previous)) {
          await this.#measureBaseline(id, previous);
        }
        // Recorded even when it is the version being installed again: a rollback must then bring that version
        // back, not leave the model with none.
        return journal.update(e.jobId, {
          state: 'activating',
          ...(previous !== undefined ? { previousVersion: previous } : {}),
        });
      }
      case 'activating': {
        const counted = this.#countAttempt(e);
        if (typeof counted === 'string') return this.#rollback(e, 'crashed', counted);
        const outcome = await this.#d.activation.activate(id, version, e.jobId, e.previousVersion);
        if (outcome && !outcome.serving) return this.#installedUnserved(counted, outcome.why);
        return journal.update(e.jobId, { state: 'health-check' });
      }
      case 'health-check': {
        const counted = this.#countAttempt(e);
        if (typeof counted === 'string') return this.#rollback(e, 'crashed', counted);
        // Resumed after a crash that may have happened mid-rollback: make sure the version under test serves.
        if ((await this.#d.activation.activeVersion(id)) !== version) {
          const outcome = await this.#d.activation.activate(id, version, e.jobId, e.previousVersion);
          if (outcome && !outcome.serving) return this.#installedUnserved(counted, outcome.why);
        }
        return this.#gate(counted);
      }
      default:
        return e;
    }
  }

  /** Interrupted activations count: a model that takes the agent down with it must not be retried forever. */
  #countAttempt(e: JournalEntry): JournalEntry | string {
    const attempts = e.attempts + 1;
    if (attempts > this.#d.health.maxAttempts) {
      return `activation or health check of ${e.packageId}@${e.packageVersion} was interrupted ${e.attempts} times`;
    }
    return this.#d.journal.update(e.jobId, { attempts });
  }

  async #gate(e: JournalEntry): Promise<JournalEntry> {
    const { id, version } = e.job.package;
    const policy = this.#d.health;
    let result: Awaited<ReturnType<HealthProbe['measure']>>;
    try {
      result = await this.#d.probe.measure({
        modelId: id,
        version,
        prompt: policy.prompt,
        maxNewTokens: policy.maxNewTokens,
        timeoutMs: policy.timeoutMs,
        ...(policy.referenceImage ? { image: policy.referenceImage } : {}),
      });
    } catch (err) {
      return this.#rollback(e, 'load-failed', `health probe failed: ${errorMessage(err)}`);
    }
    const baselineFigures = e.previousVersion ? this.#d.journal.healthOf(id, e.previousVersion) : undefined;
    const verdict = judgeHealth(
      result,
      policy,
      baselineFigures && e.previousVersion
        ? { version: e.previousVersion, decodeTokensPerSecond: baselineFigures.decodeTokensPerSecond }
        : undefined,
    );
    if (!verdict.pass) return this.#rollback(e, 'health-gate', verdict.message, verdict.numbers);
    this.#d.journal.recordHealth(id, version, result.ttftMs, result.decodeTokensPerSecond);
    await this.#d.activation.commit(id, version, e.previousVersion);
    return this.#d.journal.update(e.jobId, {
      state: 'succeeded',
      message: verdict.message,
      health: verdict.numbers,
    });
  }

  /**
   * The version is installed and selected but nothing serves it yet (no slot uses the model): a success, since
   * there is nothing to roll back to and no running model to probe. The status says the gate did not run.
   */
  async #installedUnserved(e: JournalEntry, why: string): Promise<JournalEntry> {
    const { id, version } = e.job.package;
    await this.#d.activation.commit(id, version, e.previousVersion);
    this.#d.logger.info('ota installed a model that does not serve yet', {
      jobId: e.jobId,
      model: id,
      version,
      why,
    });
    return this.#d.journal.update(e.jobId, {
      state: 'succeeded',
      message: `${id}@${version} installed and selected; ${why}, so it is not serving and the health gate was skipped`,
    });
  }

  async #measureBaseline(id: string, version: string): Promise<void> {
    const p = this.#d.health;
    try {
      const r = await this.#d.probe.measure({
        modelId: id,
        version,
        prompt: p.prompt,
        maxNewTokens: p.maxNewTokens,
        timeoutMs: p.timeoutMs,
        ...(p.referenceImage ? { image: p.referenceImage } : {}),
      });
      this.#d.journal.recordHealth(id, version, r.ttftMs, r.decodeTokensPerSecond);
    } catch (err) {
      // Without a baseline the gate still checks that the new version loads, answers and meets max TTFT.
      this.#d.logger.warn('ota baseline measurement failed', {
        model: id,
        version,
        error: errorMessage(err),
      });
    }
  }

  async #rollback(
    e: JournalEntry,
    reason: RollbackReason,
    message: string,
    health?: JournalEntry['health'],
  ): Promise<JournalEntry> {
    const { id } = e.job.package;
    try {
      await this.#d.activation.rollback(id, e.previousVersion, e.jobId);
    } catch (err) {
      return this.#d.journal.update(e.jobId, {
        state: 'failed',
        reason: 'activation',
        message: `${message}; rollback to ${e.previousVersion ?? 'no version'} failed: ${errorMessage(err)}`,
        ...(health ? { health } : {}),
      });
    }
    this.#d.logger.warn('ota rolled back', { jobId: e.jobId, reason, message });
    return this.#d.journal.update(e.jobId, {
      state: 'rolled-back',
      reason,
      message: `${message}; rolled back to ${e.previousVersion ?? 'no version'}`,
      ...(health ? { health } : {}),
    });
  }

  async #fail(e: JournalEntry, err: unknown): Promise<JournalEntry> {
    const message = errorMessage(err);
    this.#d.logger.warn('ota job stopped', { jobId: e.jobId, state: e.state, error: message });
    if (isRejection(err)) {
      return this.#d.journal.update(e.jobId, { state: 'rejected', reason: err.reason, message });
    }
    if (e.state === 'activating' || e.state === 'health-check') {
      return this.#rollback(e, 'activation-failed', `activation failed: ${message}`);
    }
    const code = err instanceof MnnEdgeError ? err.code : undefined;
    const reason =
      code === 'ENOSPC'
        ? 'disk-space'
        : code === 'EDOWNLOAD'
          ? 'download'
          : e.state === 'installing'
            ? 'install'
            : 'error';
    return this.#d.journal.update(e.jobId, { state: 'failed', reason, message });
  }

  #stagedPath(e: JournalEntry): string {
    return join(this.#d.stagingDir, `${e.artifact!.sha256}.tar`);
  }

  #cleanStaging(e: JournalEntry): void {
    if (!isTerminal(e.state) || !e.artifact) return;
    const path = this.#stagedPath(e);
    rmSync(path, { force: true });
    rmSync(`${path}.part`, { force: true });
  }

  #statusOf(e: JournalEntry): JobStatus {
    return {
      jobId: e.jobId,
      deviceId: this.#d.facts.deviceId,
      state: e.state,
      package: { id: e.packageId, version: e.packageVersion },
      ...(e.job.rolloutId ? { rolloutId: e.job.rolloutId } : {}),
      ...(e.bytesTotal !== undefined ? { bytesDone: e.bytesDone, bytesTotal: e.bytesTotal } : {}),
      ...(e.reason ? { reason: e.reason } : {}),
      ...(e.message ? { message: e.message } : {}),
      ...(e.previousVersion ? { previousVersion: e.previousVersion } : {}),
      ...(e.health ? { health: e.health } : {}),
      ts: this.#d.time.trustedNow(),
    };
  }

  #report(e: JournalEntry): JobStatus {
    const status = this.#statusOf(e);
    this.emit('status', status);
    return status;
  }
}
