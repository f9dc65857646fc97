// The operator side of a staged rollout, hawkBit-style: the selected devices are split into cumulative phases
// (by count or percentage); a phase's jobs go out together; the next phase starts once the share of
// successes reaches the success threshold, and everything stops once the share of failures passes the error
// threshold. All of it lives in SQLite, so the controller can be restarted at any moment: jobs already sent
// are not sent again under new ids, and devices answer a re-sent job id with its status.

import { MnnEdgeError } from '../../lib/errors.js';
import type { Db } from '../../lib/sqlite/database.js';
import type { JobStatus, OtaJob } from '../jobs/job.js';
import type { SignedTargets } from '../trust/targets.js';
import {
  type AbortCriterion,
  type AbortNumbers,
  abortMessage,
  type DeviceRolloutState,
  isFinal,
  isTransient,
  type RateLimit,
  retryDelayMs,
  sendAllowance,
  tripped,
} from './rollout-policy.js';

export type { DeviceRolloutState } from './rollout-policy.js';

export type PhaseSpec = { count: number } | { percent: number };

/** The newest rollout spec format this controller understands; a newer one is refused, never guessed at. */
export const ROLLOUT_FORMAT = 2;

export interface RolloutSpec {
  /** Absent in rollouts written before format 2. */
  format?: number;
  rolloutId: string;
  package: { id: string; version: string; variant?: string };
  targets: SignedTargets;
  baseUrl: string;
  devices: string[];
  phases: PhaseSpec[];
  /** Share (0–1) of a phase's devices that must succeed before the next phase starts. */
  successThreshold: number;
  /** Share (0–1) of devices started so far that may fail (any type); above it the rollout stops. */
  errorThreshold: number;
  /** More criteria by failure type (timed out counts as its own type and toward `any`). */
  abort?: AbortCriterion[];
  /** A job with no final state this long after it went out counts as timed out. */
  jobTimeoutMs?: number;
  /** Extra attempts for transient failures (download, connection), with backoff from `retryBackoffMs`. */
  retries?: number;
  retryBackoffMs?: number;
  rate?: RateLimit;
  /** Dynamic membership: devices that announce this tag later join the last phase until `untilMs`. */
  follow?: { tag: string; untilMs?: number };
  /** Listed at start and left out: ids given twice, ids no device has announced. */
  ignored?: { duplicate: string[]; unknown: string[] };
}

export type RolloutState = 'running' | 'completed' | 'stopped';

export interface RolloutDevice {
  deviceId: string;
  ordinal: number;
  phase: number | undefined;
  jobId: string | undefined;
  state: DeviceRolloutState;
  reason: string | undefined;
  attempts: number;
  sentAt: number | undefined;
  retryAt: number | undefined;
}

export interface RolloutView {
  rolloutId: string;
  spec: RolloutSpec;
  state: RolloutState;
  phase: number;
  message: string | undefined;
  /** The numbers behind a stop by an abort criterion. */
  decision: AbortNumbers | undefined;
  createdAt: number;
  devices: RolloutDevice[];
}

/** Cumulative phase ends: phase i covers devices [0, ends[i]). The last phase always covers everyone. */
export function phaseEnds(phases: readonly PhaseSpec[], total: number): number[] {
  let prev = 0;
  const ends = phases.map((p) => {
    const raw = 'count' in p ? p.count : Math.ceil((p.percent / 100) * total);
    prev = Math.min(total, Math.max(prev, raw));
    return prev;
  });
  if (ends.length === 0 || ends.at(-1)! < total) ends.push(total);
  return ends;
}

export function parsePhases(text: string): PhaseSpec[] {
  return text.split(',').map((part) => {
    const p = part.trim();
    const pct = /^(\d{1,3})%$/.exec(p);
    if (pct && Number(pct[1]) >= 1 && Number(pct[1]) <= 100) return { percent: Number(pct[1]) };
    if (/^\d+$/.test(p) && Number(p) >= 1) return { count: Number(p) };
    throw new MnnEdgeError(
      'EUSAGE',
      `Invalid phase ${JSON.stringify(p)}: expected a device count (e.g. 1) or a percentage (e.g. 25%)`,
    );
  });
}

export interface Decision {
  state: RolloutState;
  phase: number;
  message?: string;
  decision?: AbortNumbers;
  /** Devices whose job should be sent now (first sends and due retries, within the rate). */
  send: string[];
  /** Devices whose job has had no final state for longer than the job timeout. */
  timedOut: string[];
}

type DecideInput = Pick<RolloutView, 'spec' | 'state' | 'phase' | 'devices'> & { createdAt?: number };

/** Pure: what the controller should do next, given the rollout as stored and the time. */
export function decide(view: DecideInput, now = Date.now()): Decision {
  const { spec } = view;
  if (view.state !== 'running') return { state: view.state, phase: view.phase, send: [], timedOut: [] };
  const timeout = spec.jobTimeoutMs;
  const timedOut =
    timeout === undefined
      ? []
      : view.devices
          .filter((d) => !isFinal(d.state) && d.state !== 'pending' && d.state !== 'retrying')
          .filter((d) => d.sentAt !== undefined && now - d.sentAt > timeout)
          .map((d) => d.deviceId);
  const late = new Set(timedOut);
  const stateOf = (d: RolloutDevice): DeviceRolloutState => (late.has(d.deviceId) ? 'timed-out' : d.state);
  const criteria: AbortCriterion[] = [
    { type: 'any', threshold: spec.errorThreshold, minStarted: 1 },
    ...(spec.abort ?? []),
  ];
  const ends = phaseEnds(spec.phases, view.devices.length);
  const ordered = [...view.devices].sort((a, b) => a.ordinal - b.ordinal);
  const sentInLastMinute = view.devices.filter(
    (d) => d.sentAt !== undefined && now - d.sentAt < 60_000,
  ).length;
  let allowance = sendAllowance(spec.rate, view.createdAt ?? now, now, sentInLastMinute);
  let phase = view.phase;
  for (;;) {
    const inScope = ordered.slice(0, ends[phase]);
    const started = inScope.filter((d) => d.state !== 'pending').map(stateOf);
    const trip = tripped(criteria, started);
    if (trip) {
      return {
        state: 'stopped',
        phase,
        message: abortMessage(phase, trip, trip.type === 'any' && criteria[0]!.threshold === trip.threshold),
        decision: trip,
        send: [],
        timedOut,
      };
    }
    const due = inScope.filter(
      (d) => d.state === 'pending' || (d.state === 'retrying' && (d.retryAt ?? 0) <= now),
    );
    const send = due.slice(0, Math.max(0, Math.min(due.length, allowance))).map((d) => d.deviceId);
    allowance -= send.length;
    const phaseDevices = ordered.slice(phase === 0 ? 0 : ends[phase - 1], ends[phase]);
    if (!phaseDevices.every((d) => isFinal(stateOf(d)))) return { state: 'running', phase, send, timedOut };
    const ok = phaseDevices.filter((d) => d.state === 'succeeded').length;
    if (phaseDevices.length > 0 && ok / phaseDevices.length < spec.successThreshold) {
      return {
        state: 'stopped',
        phase,
        message: `stopped after phase ${phase + 1}: ${ok} of ${phaseDevices.length} succeeded (success threshold ${spec.successThreshold})`,
        send: [],
        timedOut,
      };
    }
    if (phase + 1 >= ends.length) {
      // A following rollout stays open for devices that join later, until its end time.
      if (spec.follow && (spec.follow.untilMs === undefined || now < spec.follow.untilMs))
        return { state: 'running', phase, send, timedOut };
      const failed =
        ordered.filter((d) => d.state !== 'succeeded' && !late.has(d.deviceId)).length + late.size;
      return {
        state: 'completed',
        phase,
        message:
          failed === 0
            ? `all ${ordered.length} devices updated`
            : `${ordered.length - failed} of ${ordered.length} devices updated`,
        send,
        timedOut,
      };
    }
    phase++;
  }
}

/** Attempt 1 keeps the plain id (devices dedupe by it); a retry is a new job the device runs again. */
export function jobIdFor(rolloutId: string, deviceId: string, attempt = 1): string {
  return attempt <= 1 ? `${rolloutId}.${deviceId}` : `${rolloutId}.${deviceId}.r${attempt}`;
}

/** Sends a job to one device (retained, QoS 1); the controller's only side effect besides SQLite. */
export type JobSender = (deviceId: string, job: OtaJob) => Promise<void>;

interface DeviceRow {
  device_id: string;
  ordinal: number;
  phase: number | null;
  job_id: string | null;
  state: DeviceRolloutState;
  reason: string | null;
  attempts: number;
  sent_at: number | null;
  retry_at: number | null;
}

function deviceOf(d: DeviceRow): RolloutDevice {
  return {
    deviceId: d.device_id,
    ordinal: d.ordinal,
    phase: d.phase ?? undefined,
    jobId: d.job_id ?? undefined,
    state: d.state,
    reason: d.reason ?? undefined,
    attempts: d.attempts,
    sentAt: d.sent_at ?? undefined,
    retryAt: d.retry_at ?? undefined,
  };
}

export class RolloutController {
  readonly #db: Db;
  readonly #send: JobSender;
  readonly #now: () => number;

  constructor(db: Db, send: JobSender, now: () => number = Date.now) {
    this.#db = db;
    this.#send = send;
    this.#now = now;
  }

  /** Creates the rollout; ids given twice are kept once and listed in `spec.ignored.duplicate`. */
  create(input: RolloutSpec): RolloutView {
    const seen = new Set<string>();
    const duplicate = new Set<string>();
    for (const d of input.devices) (seen.has(d) ? duplicate : seen).add(d);
    const spec: RolloutSpec = {
      ...input,
      format: ROLLOUT_FORMAT,
      devices: [...seen],
      ignored: {
        duplicate: [...new Set([...(input.ignored?.duplicate ?? []), ...duplicate])],
        unknown: input.ignored?.unknown ?? [],
      },
    };
    if (spec.devices.length === 0 && !spec.follow)
      throw new MnnEdgeError('EUSAGE', 'A rollout needs at least one device');
    for (const [name, v] of [
      ['success threshold', spec.successThreshold],
      ['error threshold', spec.errorThreshold],
    ] as const) {
      if (!(v >= 0 && v <= 1))
        throw new MnnEdgeError('EUSAGE', `The ${name} must be between 0 and 1, got ${v}`);
    }
    const now = this.#now();
    this.#db.transaction(() => {
      const exists = this.#db.prepare('SELECT 1 FROM ota_rollouts WHERE rollout_id = ?').get(spec.rolloutId);
      if (exists)
        throw new MnnEdgeError('EEXIST', `Rollout ${spec.rolloutId} already exists; resume it instead`);
      this.#db
        .prepare(
          `INSERT INTO ota_rollouts (rollout_id, spec, state, phase, created_at, updated_at)
           VALUES (?, ?, 'running', 0, ?, ?)`,
        )
        .run(spec.rolloutId, JSON.stringify(spec), now, now);
      const ins = this.#db.prepare(
        `INSERT INTO ota_rollout_devices (rollout_id, device_id, ordinal, state, updated_at) VALUES (?, ?, ?, 'pending', ?)`,
      );
      for (const [i, d] of spec.devices.entries()) ins.run(spec.rolloutId, d, i, now);
    })();
    return this.get(spec.rolloutId)!;
  }

  get(rolloutId: string): RolloutView | undefined {
    const r = this.#db.prepare('SELECT * FROM ota_rollouts WHERE rollout_id = ?').get(rolloutId) as
      | {
          spec: string;
          state: RolloutState;
          phase: number;
          message: string | null;
          decision: string | null;
          created_at: number;
        }
      | undefined;
    if (!r) return undefined;
    const spec = JSON.parse(r.spec) as RolloutSpec;
    if ((spec.format ?? 1) > ROLLOUT_FORMAT)
      throw new MnnEdgeError(
        'EVERSION',
        `Rollout ${rolloutId} was written in rollout format ${spec.format}; this mnn-edge reads up to ${ROLLOUT_FORMAT}: use a newer mnn-edge`,
      );
    const devices = (
      this.#db
        .prepare('SELECT * FROM ota_rollout_devices WHERE rollout_id = ? ORDER BY ordinal')
        .all(rolloutId) as DeviceRow[]
    ).map(deviceOf);
    return {
      rolloutId,
      spec,
      state: r.state,
      phase: r.phase,
      message: r.message ?? undefined,
      decision: r.decision ? (JSON.parse(r.decision) as AbortNumbers) : undefined,
      createdAt: r.created_at,
      devices,
    };
  }

  list(): RolloutView[] {
    const ids = this.#db.prepare('SELECT rollout_id FROM ota_rollouts ORDER BY created_at').all() as {
      rollout_id: string;
    }[];
    return ids.map((r) => this.get(r.rollout_id)!);
  }

  /**
   * Applies a device's status report; ignores reports for other rollouts, other attempts or devices whose
   * state is final. A transient failure with attempts left becomes `retrying` with its backoff.
   */
  observe(status: JobStatus): boolean {
    if (!status.rolloutId) return false;
    const dev = this.#row(status.rolloutId, status.deviceId);
    if (!dev || dev.job_id !== status.jobId || isFinal(dev.state)) return false;
    const spec = this.#spec(status.rolloutId);
    const retries = spec?.retries ?? 0;
    const now = this.#now();
    if (isTransient(status.state, status.reason) && dev.attempts <= retries) {
      const retryAt = now + retryDelayMs(dev.attempts, spec?.retryBackoffMs ?? 5_000);
      const reason = `${status.state} (${status.reason}${status.message ? `: ${status.message}` : ''}); attempt ${dev.attempts} of ${retries + 1}, retrying`;
      this.#db
        .prepare(
          `UPDATE ota_rollout_devices SET state = 'retrying', reason = ?, retry_at = ?, updated_at = ? WHERE rollout_id = ? AND device_id = ?`,
        )
        .run(reason.slice(0, 500), retryAt, now, status.rolloutId, status.deviceId);
      return true;
    }
    const reason =
      status.reason !== undefined
        ? `${status.reason}${status.message ? `: ${status.message}` : ''}`.slice(0, 500)
        : null;
    this.#db
      .prepare(
        'UPDATE ota_rollout_devices SET state = ?, reason = ?, updated_at = ? WHERE rollout_id = ? AND device_id = ?',
      )
      .run(status.state, reason, now, status.rolloutId, status.deviceId);
    return true;
  }

  /** A device in the rollout sent a status nobody can read: it counts as failed, with why. */
  observeMalformed(rolloutId: string, deviceId: string, why: string): boolean {
    const dev = this.#row(rolloutId, deviceId);
    if (!dev || dev.state === 'pending' || isFinal(dev.state)) return false;
    this.#db
      .prepare(
        `UPDATE ota_rollout_devices SET state = 'failed', reason = ?, updated_at = ? WHERE rollout_id = ? AND device_id = ?`,
      )
      .run(why.slice(0, 500), this.#now(), rolloutId, deviceId);
    return true;
  }

  /** Dynamic membership: a device that came along later joins the last phase (once). */
  join(rolloutId: string, deviceId: string): boolean {
    const view = this.get(rolloutId);
    if (view?.state !== 'running' || !view.spec.follow) return false;
    const until = view.spec.follow.untilMs;
    if (until !== undefined && this.#now() >= until) return false;
    if (view.devices.some((d) => d.deviceId === deviceId)) return false;
    const ordinal = view.devices.reduce((m, d) => Math.max(m, d.ordinal), -1) + 1;
    this.#db
      .prepare(
        `INSERT INTO ota_rollout_devices (rollout_id, device_id, ordinal, state, updated_at) VALUES (?, ?, ?, 'pending', ?)`,
      )
      .run(rolloutId, deviceId, ordinal, this.#now());
    return true;
  }

  /** An operator's explicit stop (also how a following rollout is closed). */
  stop(rolloutId: string, message: string): void {
    this.#db
      .prepare(
        `UPDATE ota_rollouts SET state = 'stopped', message = ?, updated_at = ? WHERE rollout_id = ? AND state = 'running'`,
      )
      .run(message, this.#now(), rolloutId);
  }

  /** One step of the controller: send what is due, advance or stop. Safe to call at any time, repeatedly. */
  async advance(rolloutId: string, options: { resendUnanswered?: boolean } = {}): Promise<RolloutView> {
    const view = this.get(rolloutId);
    if (!view) throw new MnnEdgeError('ENOENT', `No rollout ${rolloutId}`);
    const now = this.#now();
    const d = decide(view, now);
    // On resume, jobs recorded as sent but perhaps never published (a crash between the two) go out again
    // under the same job id; devices answer a known id with its status and never run it twice.
    const resend =
      view.state === 'running' && options.resendUnanswered
        ? view.devices.filter((x) => x.state === 'sent')
        : [];
    const byId = new Map(view.devices.map((x) => [x.deviceId, x]));
    const mark = this.#db.prepare(
      `UPDATE ota_rollout_devices SET state = 'sent', phase = ?, job_id = ?, attempts = ?, sent_at = ?, retry_at = NULL, updated_at = ? WHERE rollout_id = ? AND device_id = ?`,
    );
    const late = this.#db.prepare(
      `UPDATE ota_rollout_devices SET state = 'timed-out', reason = ?, updated_at = ? WHERE rollout_id = ? AND device_id = ?`,
    );
    const timeoutS = Math.round((view.spec.jobTimeoutMs ?? 0) / 1000);
    const jobs: { deviceId: string; jobId: string }[] = resend.map((x) => ({
      deviceId: x.deviceId,
      jobId: x.jobId ?? jobIdFor(rolloutId, x.deviceId, x.attempts),
    }));
    this.#db.transaction(() => {
      for (const id of d.timedOut) {
        const last = byId.get(id)?.state;
        late.run(`no final state within ${timeoutS} s (last: ${last})`, now, rolloutId, id);
      }
      for (const id of d.send) {
        const attempt = (byId.get(id)?.attempts ?? 0) + 1;
        const jobId = jobIdFor(rolloutId, id, attempt);
        mark.run(d.phase, jobId, attempt, now, now, rolloutId, id);
        jobs.push({ deviceId: id, jobId });
      }
      this.#db
        .prepare(
          'UPDATE ota_rollouts SET state = ?, phase = ?, message = ?, decision = ?, updated_at = ? WHERE rollout_id = ?',
        )
        .run(
          d.state,
          d.phase,
          d.message ?? null,
          d.decision ? JSON.stringify(d.decision) : null,
          now,
          rolloutId,
        );
    })();
    for (const j of jobs) {
      await this.#send(j.deviceId, {
        jobId: j.jobId,
        package: view.spec.package,
        targets: view.spec.targets,
        baseUrl: view.spec.baseUrl,
        rolloutId,
      });
    }
    return this.get(rolloutId)!;
  }

  #row(rolloutId: string, deviceId: string): DeviceRow | undefined {
    return this.#db
      .prepare('SELECT * FROM ota_rollout_devices WHERE rollout_id = ? AND device_id = ?')
      .get(rolloutId, deviceId) as DeviceRow | undefined;
  }

  #spec(rolloutId: string): RolloutSpec | undefined {
    const r = this.#db.prepare('SELECT spec FROM ota_rollouts WHERE rollout_id = ?').get(rolloutId) as
      | { spec: string }
      | undefined;
    return r ? (JSON.parse(r.spec) as RolloutSpec) : undefined;
  }
}
