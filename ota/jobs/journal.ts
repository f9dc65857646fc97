// The device's OTA journal in SQLite. Each state change is committed before the step it announces starts, so
// after a power cut the runner knows which step to redo; every step is written to be safe to redo.

import type { Db } from '../../lib/sqlite/database.js';
import type { RejectReason } from '../trust/rejection.js';
import type { Artifact } from '../trust/targets.js';
import type { FailureReason, HealthNumbers, JobState, OtaJob, RollbackReason } from './job.js';

export interface JournalEntry {
  jobId: string;
  seq: number;
  state: JobState;
  reason?: RejectReason | FailureReason | RollbackReason;
  message?: string;
  packageId: string;
  packageVersion: string;
  artifact?: Artifact;
  url?: string;
  bytesDone: number;
  bytesTotal?: number;
  previousVersion?: string;
  attempts: number;
  health?: HealthNumbers;
  job: OtaJob;
  createdAt: number;
  updatedAt: number;
}

export type JournalPatch = Partial<
  Pick<
    JournalEntry,
    | 'state'
    | 'reason'
    | 'message'
    | 'artifact'
    | 'url'
    | 'bytesDone'
    | 'bytesTotal'
    | 'previousVersion'
    | 'attempts'
    | 'health'
  >
>;

interface Row {
  job_id: string;
  seq: number;
  state: string;
  reason: string | null;
  message: string | null;
  package_id: string;
  package_version: string;
  artifact: string | null;
  url: string | null;
  bytes_done: number;
  bytes_total: number | null;
  previous_version: string | null;
  attempts: number;
  measurements: string | null;
  job: string;
  created_at: number;
  updated_at: number;
}

function fromRow(r: Row): JournalEntry {
  return {
    jobId: r.job_id,
    seq: r.seq,
    state: r.state as JobState,
    ...(r.reason !== null ? { reason: r.reason as JournalEntry['reason'] } : {}),
    ...(r.message !== null ? { message: r.message } : {}),
    packageId: r.package_id,
    packageVersion: r.package_version,
    ...(r.artifact !== null ? { artifact: JSON.parse(r.artifact) as Artifact } : {}),
    ...(r.url !== null ? { url: r.url } : {}),
    bytesDone: r.bytes_done,
    ...(r.bytes_total !== null ? { bytesTotal: r.bytes_total } : {}),
    ...(r.previous_version !== null ? { previousVersion: r.previous_version } : {}),
    attempts: r.attempts,
    ...(r.measurements !== null ? { health: JSON.parse(r.measurements) as HealthNumbers } : {}),
    job: JSON.parse(r.job) as OtaJob,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const COLUMNS: Record<keyof JournalPatch, string> = {
  state: 'state',
  reason: 'reason',
  message: 'message',
  artifact: 'artifact',
  url: 'url',
  bytesDone: 'bytes_done',
  bytesTotal: 'bytes_total',
  previousVersion: 'previous_version',
  attempts: 'attempts',
  health: 'measurements',
};

export class JobJournal {
  readonly #db: Db;
  readonly #now: () => number;

  constructor(db: Db, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  get(jobId: string): JournalEntry | undefined {
    const row = this.#db.prepare('SELECT * FROM ota_jobs WHERE job_id = ?').get(jobId) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** Records a new job as queued; returns undefined when the job id is already known (jobs are idempotent). */
  insert(job: OtaJob): JournalEntry | undefined {
    const now = this.#now();
    const res = this.#db
      .prepare(
        `INSERT INTO ota_jobs (job_id, seq, state, package_id, package_version, job, created_at, updated_at)
         VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM ota_jobs), 'queued', ?, ?, ?, ?, ?)
         ON CONFLICT(job_id) DO NOTHING`,
      )
      .run(job.jobId, job.package.id, job.package.version, JSON.stringify(job), now, now);
    return res.changes === 1 ? this.get(job.jobId) : undefined;
  }

  update(jobId: string, patch: JournalPatch): JournalEntry {
    const sets: string[] = ['updated_at = ?'];
    const values: unknown[] = [this.#now()];
    for (const [key, value] of Object.entries(patch) as [keyof JournalPatch, unknown][]) {
      sets.push(`${COLUMNS[key]} = ?`);
      values.push(value === undefined ? null : typeof value === 'object' ? JSON.stringify(value) : value);
    }
    this.#db.prepare(`UPDATE ota_jobs SET ${sets.join(', ')} WHERE job_id = ?`).run(...values, jobId);
    const entry = this.get(jobId);
    if (!entry) throw new Error(`OTA job ${jobId} is not in the journal`);
    return entry;
  }

  /** The oldest job that has not reached a final state. */
  nextUnfinished(): JournalEntry | undefined {
    const row = this.#db
      .prepare(
        `SELECT * FROM ota_jobs WHERE state NOT IN ('succeeded', 'failed', 'rolled-back', 'rejected')
         ORDER BY seq LIMIT 1`,
      )
      .get() as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  list(limit = 50): JournalEntry[] {
    return (this.#db.prepare('SELECT * FROM ota_jobs ORDER BY seq DESC LIMIT ?').all(limit) as Row[]).map(
      fromRow,
    );
  }

  healthOf(modelId: string, version: string): { decodeTokensPerSecond: number; ttftMs: number } | undefined {
    const row = this.#db
      .prepare('SELECT ttft_ms, decode_tps FROM ota_health WHERE model_id = ? AND version = ?')
      .get(modelId, version) as { ttft_ms: number; decode_tps: number } | undefined;
    return row ? { ttftMs: row.ttft_ms, decodeTokensPerSecond: row.decode_tps } : undefined;
  }

  recordHealth(modelId: string, version: string, ttftMs: number, decodeTokensPerSecond: number): void {
    this.#db
      .prepare(
        `INSERT INTO ota_health (model_id, version, ttft_ms, decode_tps, measured_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(model_id, version) DO UPDATE SET ttft_ms = excluded.ttft_ms,
           decode_tps = excluded.decode_tps, measured_at = excluded.measured_at`,
      )
      .run(modelId, version, ttftMs, decodeTokensPerSecond, this.#now());
  }
}
