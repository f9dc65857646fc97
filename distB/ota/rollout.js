// The operator side of a staged rollout, hawkBit-style: the selected devices are split into cumulative phases
// (by count or percentage); a phase's jobs go out together; the next phase starts once the share of
// successes reaches the success threshold, and everything stops once the share of failures passes the error
// threshold. All of it lives in SQLite, so the controller can be restarted at any moment: jobs already sent
// are not sent again under new ids, and devices answer a re-sent job id with its status.
import { MnnEdgeError } from '../agent/common/errors.js';
import { isTerminal } from './job.js';
/** Cumulative phase ends: phase i covers devices [0, ends[i]). The last phase always covers everyone. */
export function phaseEnds(phases, total) {
    let prev = 0;
    const ends = phases.map((p) => {
        const raw = 'count' in p ? p.count : Math.ceil((p.percent / 100) * total);
        prev = Math.min(total, Math.max(prev, raw));
        return prev;
    });
    if (ends.length === 0 || ends.at(-1) < total)
        ends.push(total);
    return ends;
}
export function parsePhases(text) {
    return text.split(',').map((part) => {
        const p = part.trim();
        const pct = /^(\d{1,3})%$/.exec(p);
        if (pct && Number(pct[1]) >= 1 && Number(pct[1]) <= 100)
            return { percent: Number(pct[1]) };
        if (/^\d+$/.test(p) && Number(p) >= 1)
            return { count: Number(p) };
        throw new MnnEdgeError('EUSAGE', `Invalid phase ${JSON.stringify(p)}: expected a device count (e.g. 1) or a percentage (e.g. 25%)`);
    });
}
const FAILED = ['failed', 'rolled-back', 'rejected'];
/** Pure: what the controller should do next, given the rollout as stored. */
export function decide(view) {
    const { spec } = view;
    if (view.state !== 'running')
        return { state: view.state, phase: view.phase, send: [] };
    const ends = phaseEnds(spec.phases, view.devices.length);
    const ordered = [...view.devices].sort((a, b) => a.ordinal - b.ordinal);
    let phase = view.phase;
    for (;;) {
        const inScope = ordered.slice(0, ends[phase]);
        const started = inScope.filter((d) => d.state !== 'pending');
        const failed = started.filter((d) => FAILED.includes(d.state)).length;
        if (started.length > 0 && failed / started.length > spec.errorThreshold) {
            return {
                state: 'stopped',
                phase,
                message: `stopped in phase ${phase + 1}: ${failed} of ${started.length} devices failed (error threshold ${spec.errorThreshold})`,
                send: [],
            };
        }
        const pending = inScope.filter((d) => d.state === 'pending').map((d) => d.deviceId);
        if (pending.length > 0)
            return { state: 'running', phase, send: pending };
        const phaseDevices = ordered.slice(phase === 0 ? 0 : ends[phase - 1], ends[phase]);
        if (!phaseDevices.every((d) => isTerminalState(d.state)))
            return { state: 'running', phase, send: [] };
        const ok = phaseDevices.filter((d) => d.state === 'succeeded').length;
        if (phaseDevices.length > 0 && ok / phaseDevices.length < spec.successThreshold) {
            return {
                state: 'stopped',
                phase,
                message: `stopped after phase ${phase + 1}: ${ok} of ${phaseDevices.length} succeeded (success threshold ${spec.successThreshold})`,
                send: [],
            };
        }
        if (phase + 1 >= ends.length) {
            return { state: 'completed', phase, message: `all ${ordered.length} devices updated`, send: [] };
        }
        phase++;
    }
}
function isTerminalState(s) {
    return s !== 'pending' && s !== 'sent' && isTerminal(s);
}
export function jobIdFor(rolloutId, deviceId) {
    return `${rolloutId}.${deviceId}`;
}
export class RolloutController {
    #db;
    #send;
    #now;
    constructor(db, send, now = Date.now) {
        this.#db = db;
        this.#send = send;
        this.#now = now;
    }
    create(spec) {
        if (spec.devices.length === 0)
            throw new MnnEdgeError('EUSAGE', 'A rollout needs at least one device');
        if (new Set(spec.devices).size !== spec.devices.length) {
            throw new MnnEdgeError('EUSAGE', 'A rollout lists a device twice');
        }
        for (const [name, v] of [
            ['success threshold', spec.successThreshold],
            ['error threshold', spec.errorThreshold],
        ]) {
            if (!(v >= 0 && v <= 1))
                throw new MnnEdgeError('EUSAGE', `The ${name} must be between 0 and 1, got ${v}`);
        }
        const now = this.#now();
        this.#db.transaction(() => {
            const exists = this.#db.prepare('SELECT 1 FROM ota_rollouts WHERE rollout_id = ?').get(spec.rolloutId);
            if (exists)
                throw new MnnEdgeError('EEXIST', `Rollout ${spec.rolloutId} already exists; resume it instead`);
            this.#db
                .prepare(`INSERT INTO ota_rollouts (rollout_id, spec, state, phase, created_at, updated_at)
           VALUES (?, ?, 'running', 0, ?, ?)`)
                .run(spec.rolloutId, JSON.stringify(spec), now, now);
            const ins = this.#db.prepare(`INSERT INTO ota_rollout_devices (rollout_id, device_id, ordinal, state, updated_at) VALUES (?, ?, ?, 'pending', ?)`);
            for (const [i, d] of spec.devices.entries())
                ins.run(spec.rolloutId, d, i, now);
        })();
        return this.get(spec.rolloutId);
    }
    get(rolloutId) {
        const r = this.#db.prepare('SELECT * FROM ota_rollouts WHERE rollout_id = ?').get(rolloutId);
        if (!r)
            return undefined;
        const devices = this.#db
            .prepare('SELECT * FROM ota_rollout_devices WHERE rollout_id = ? ORDER BY ordinal')
            .all(rolloutId).map((d) => ({
            deviceId: d.device_id,
            ordinal: d.ordinal,
            phase: d.phase ?? undefined,
            jobId: d.job_id ?? undefined,
            state: d.state,
            reason: d.reason ?? undefined,
        }));
        return {
            rolloutId,
            spec: JSON.parse(r.spec),
            state: r.state,
            phase: r.phase,
            message: r.message ?? undefined,
            devices,
        };
    }
    list() {
        const ids = this.#db.prepare('SELECT rollout_id FROM ota_rollouts ORDER BY created_at').all();
        return ids.map((r) => this.get(r.rollout_id));
    }
    /** Applies a device's status report; ignores reports for other rollouts or older than what is known. */
    observe(status) {
        if (!status.rolloutId)
            return false;
        const dev = this.#db
            .prepare('SELECT job_id, state FROM ota_rollout_devices WHERE rollout_id = ? AND device_id = ?')
            .get(status.rolloutId, status.deviceId);
        if (!dev || dev.job_id !== status.jobId || isTerminalState(dev.state))
            return false;
        this.#db
            .prepare('UPDATE ota_rollout_devices SET state = ?, reason = ?, updated_at = ? WHERE rollout_id = ? AND device_id = ?')
            .run(status.state, status.reason ?? null, this.#now(), status.rolloutId, status.deviceId);
        return true;
    }
    /** One step of the controller: send what is due, advance or stop. Safe to call at any time, repeatedly. */
    async advance(rolloutId, options = {}) {
        const view = this.get(rolloutId);
        if (!view)
            throw new MnnEdgeError('ENOENT', `No rollout ${rolloutId}`);
        const d = decide(view);
        // On resume, jobs recorded as sent but perhaps never published (a crash between the two) go out again
        // under the same job id.
        const resend = view.state === 'running' && options.resendUnanswered
            ? view.devices.filter((x) => x.state === 'sent')
            : [];
        const now = this.#now();
        const mark = this.#db.prepare(`UPDATE ota_rollout_devices SET state = 'sent', phase = ?, job_id = ?, updated_at = ? WHERE rollout_id = ? AND device_id = ?`);
        this.#db.transaction(() => {
            for (const id of d.send)
                mark.run(d.phase, jobIdFor(rolloutId, id), now, rolloutId, id);
            this.#db
                .prepare('UPDATE ota_rollouts SET state = ?, phase = ?, message = ?, updated_at = ? WHERE rollout_id = ?')
                .run(d.state, d.phase, d.message ?? null, now, rolloutId);
        })();
        for (const id of [...resend.map((x) => x.deviceId), ...d.send]) {
            await this.#send(id, {
                jobId: jobIdFor(rolloutId, id),
                package: view.spec.package,
                targets: view.spec.targets,
                baseUrl: view.spec.baseUrl,
                rolloutId,
            });
        }
        return this.get(rolloutId);
    }
}
//# sourceMappingURL=rollout.js.map