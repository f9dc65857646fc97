// Operator-side MQTT: publishing jobs, reading the devices' retained OTA statuses, and driving a rollout
// controller from them. Runs wherever the broker is reachable (beside it, or on a laptop).
import { connectAsync } from 'mqtt';
import { parseJsonInput } from '../agent/common/json-input.js';
import { validate } from '../agent/common/schema.js';
import { jobStatusSchema, otaTopics } from './job.js';
export async function connectOperator(broker) {
    return connectAsync(broker.url, {
        protocolVersion: 5,
        clientId: `mnn-edge-ota-${process.pid}-${Date.now().toString(36)}`,
        clean: true,
        connectTimeout: 10_000,
        reconnectPeriod: 1000,
        ...(broker.username !== undefined ? { username: broker.username } : {}),
        ...(broker.password !== undefined ? { password: broker.password } : {}),
    });
}
/** Retained, so a device that is offline now picks the job up when it reconnects; jobs are idempotent by id. */
export async function publishJob(client, to, job) {
    const topic = 'device' in to ? otaTopics.deviceJobs(to.device) : otaTopics.tagJobs(to.tag);
    await client.publishAsync(topic, JSON.stringify(job), { qos: 1, retain: true });
}
/** A root rotation, retained on the root topic: a device that connects later still receives the newest root. */
export async function publishRootRotation(client, to, job) {
    const topic = 'device' in to ? otaTopics.deviceRoot(to.device) : otaTopics.tagRoot(to.tag);
    await client.publishAsync(topic, JSON.stringify(job), { qos: 1, retain: true });
}
export function parseStatus(payload) {
    if (payload.length === 0)
        return undefined;
    try {
        const v = parseJsonInput(payload, 'OTA status');
        return validate(jobStatusSchema, v).length === 0 ? v : undefined;
    }
    catch {
        return undefined;
    }
}
/** Calls `onStatus` for every device status report (the retained ones first). Returns an unsubscribe. */
export async function watchStatuses(client, onStatus) {
    const handler = (topic, payload) => {
        if (!/^mnn-edge\/[^/]+\/ota\/status$/.test(topic))
            return;
        const s = parseStatus(payload);
        if (s)
            onStatus(s);
    };
    client.on('message', handler);
    await client.subscribeAsync(otaTopics.allStatus, { qos: 1 });
    return async () => {
        client.removeListener('message', handler);
        await client.unsubscribeAsync(otaTopics.allStatus);
    };
}
/** The latest status of every device, as retained on the broker, gathered for `settleMs`. */
export async function collectStatuses(client, settleMs = 1000) {
    const latest = new Map();
    const stop = await watchStatuses(client, (s) => latest.set(s.deviceId, s));
    await new Promise((r) => setTimeout(r, settleMs));
    await stop();
    return latest;
}
/**
 * Runs a rollout until it completes or stops: every status report advances the controller, which sends the
 * next phase's jobs. Resolves with the final view.
 */
export async function driveRollout(client, controller, rolloutId, onChange = () => { }, signal) {
    let view = await controller.advance(rolloutId, { resendUnanswered: true });
    onChange(view);
    if (view.state !== 'running')
        return view;
    let chain = Promise.resolve();
    return new Promise((resolve, reject) => {
        let stopWatching;
        const finish = (v) => {
            signal?.removeEventListener('abort', onAbort);
            void stopWatching?.().finally(() => resolve(v));
        };
        const onAbort = () => finish(view);
        signal?.addEventListener('abort', onAbort, { once: true });
        watchStatuses(client, (status) => {
            if (status.rolloutId !== rolloutId)
                return;
            // Serialised: each advance sees the previous one's writes.
            chain = chain.then(async () => {
                if (!controller.observe(status))
                    return;
                view = await controller.advance(rolloutId);
                onChange(view);
                if (view.state !== 'running')
                    finish(view);
            });
            chain.catch(reject);
        }).then((stop) => {
            stopWatching = stop;
        }, reject);
    });
}
//# sourceMappingURL=operator.js.map