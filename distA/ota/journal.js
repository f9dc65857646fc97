// The device's OTA journal in SQLite. Each state change is committed before the step it announces starts, so
// after a power cut the runner knows which step to redo; every step is written to be safe to redo.
function fromRow(r) {
    return {
        jobId: r.job_id,
        seq: r.seq,
        state: r.state,
        ...(r.reason !== null ? { reason: r.reason } : {}),
        ...(r.message !== null ? { message: r.message } : {}),
        packageId: r.package_id,
        packageVersion: r.package_version,
        ...(r.artifact !== null ? { artifact: JSON.parse(r.artifact) } : {}),
        ...(r.url !== null ? { url: r.url } : {}),
        bytesDone: r.bytes_done,
        ...(r.bytes_total !== null ? { bytesTotal: r.bytes_total } : {}),
        ...(r.previous_version !== null ? { previousVersion: r.previous_version } : {}),
        attempts: r.attempts,
        ...(r.measurements !== null ? { health: JSON.parse(r.measurements) } : {}),
        job: JSON.parse(r.job),
        createdAt: r.created_at,
        updatedAt: r.updated_at,
    };
}
const COLUMNS = {
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
    #db;
    #now;
    constructor(db, now = Date.now) {
        this.#db = db;
        this.#now = now;
    }
    get(jobId) {
        const row = this.#db.prepare('SELECT * FROM ota_jobs WHERE job_id = ?').get(jobId);
        return row ? fromRow(row) : undefined;
    }
    /** Records a new job as queued; returns undefined when the job id is already known (jobs are idempotent). */
    insert(job) {
        const now = this.#now();
        const res = this.#db
            .prepare(`INSERT INTO ota_jobs (job_id, seq, state, package_id, package_version, job, created_at, updated_at)
         VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM ota_jobs), 'queued', ?, ?, ?, ?, ?)
         ON CONFLICT(job_id) DO NOTHING`)
            .run(job.jobId, job.package.id, job.package.version, JSON.stringify(job), now, now);
        return res.changes === 1 ? this.get(job.jobId) : undefined;
    }
    update(jobId, patch) {
        const sets = ['updated_at = ?'];
        const values = [this.#now()];
        for (const [key, value] of Object.entries(patch)) {
            sets.push(`${COLUMNS[key]} = ?`);
            values.push(value === undefined ? null : typeof value === 'object' ? JSON.stringify(value) : value);
        }
        this.#db.prepare(`UPDATE ota_jobs SET ${sets.join(', ')} WHERE job_id = ?`).run(...values, jobId);
        const entry = this.get(jobId);
        if (!entry)
            throw new Error(`OTA job ${jobId} is not in the journal`);
        return entry;
    }
    /** The oldest job that has not reached a final state. */
    nextUnfinished() {
        const row = this.#db
            .prepare(`SELECT * FROM ota_jobs WHERE state NOT IN ('succeeded', 'failed', 'rolled-back', 'rejected')
         ORDER BY seq LIMIT 1`)
            .get();
        return row ? fromRow(row) : undefined;
    }
    list(limit = 50) {
        return this.#db.prepare('SELECT * FROM ota_jobs ORDER BY seq DESC LIMIT ?').all(limit).map(fromRow);
    }
    healthOf(modelId, version) {
        const row = this.#db
            .prepare('SELECT ttft_ms, decode_tps FROM ota_health WHERE model_id = ? AND version = ?')
            .get(modelId, version);
        return row ? { ttftMs: row.ttft_ms, decodeTokensPerSecond: row.decode_tps } : undefined;
    }
    recordHealth(modelId, version, ttftMs, decodeTokensPerSecond) {
        this.#db
            .prepare(`INSERT INTO ota_health (model_id, version, ttft_ms, decode_tps, measured_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(model_id, version) DO UPDATE SET ttft_ms = excluded.ttft_ms,
           decode_tps = excluded.decode_tps, measured_at = excluded.measured_at`)
            .run(modelId, version, ttftMs, decodeTokensPerSecond, this.#now());
    }
}
//# sourceMappingURL=journal.js.map