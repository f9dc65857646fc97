import { readFileSync } from 'node:fs';
import { MnnEdgeError } from '../common/errors.js';
// How the agent reaches its broker: URL scheme picks the transport (mqtt, mqtts, ws, wss), credentials are
// per device, TLS may verify the broker against a CA and present a client certificate (mTLS). Reconnects use
// full-jitter exponential backoff so a fleet that lost its broker does not come back in lockstep.
export const DEFAULT_RECONNECT = { minMs: 1_000, maxMs: 60_000 };
export const DEFAULT_KEEPALIVE_SEC = 30;
export const DEFAULT_SESSION_EXPIRY_SEC = 3600;
/** Full jitter: a uniform delay in [min, min(max, min·2^attempt)]. */
export function backoffDelay(attempt, range, random = Math.random) {
    const ceiling = Math.min(range.maxMs, range.minMs * 2 ** Math.min(attempt, 30));
    return Math.round(range.minMs + random() * Math.max(0, ceiling - range.minMs));
}
function readPem(path, what) {
    if (path === undefined)
        return undefined;
    try {
        return readFileSync(path);
    }
    catch (err) {
        throw new MnnEdgeError('ECONFIG', `Cannot read mqtt.${what} ${path}: ${err.message}`);
    }
}
export function buildClientOptions(config, target, clientId, will) {
    const secure = /^(mqtts|wss):/.test(target.url);
    if ((config.cert === undefined) !== (config.key === undefined))
        throw new MnnEdgeError('ECONFIG', 'mqtt.cert and mqtt.key must be given together for a client certificate');
    if (!secure && (config.ca || config.cert))
        throw new MnnEdgeError('ECONFIG', `mqtt.ca/cert/key need an mqtts:// or wss:// url, got ${target.url}`);
    const ca = readPem(config.ca, 'ca');
    const cert = readPem(config.cert, 'cert');
    const key = readPem(config.key, 'key');
    const sessionExpiry = config.sessionExpirySec ?? DEFAULT_SESSION_EXPIRY_SEC;
    return {
        clientId,
        protocolVersion: target.protocolVersion,
        // A session the broker keeps while the device is away, so commands and jobs sent meanwhile wait for it
        // (requests carry expiresAt, and MQTT 5 message expiry, against replaying stale ones). Telemetry does not
        // rely on it: the outbox makes it durable. The agent subscribes again after every CONNACK regardless.
        clean: sessionExpiry === 0,
        ...(target.protocolVersion === 5 && sessionExpiry > 0
            ? { properties: { sessionExpiryInterval: sessionExpiry } }
            : {}),
        keepalive: config.keepaliveSec ?? DEFAULT_KEEPALIVE_SEC,
        // Reconnects are scheduled by the agent with jittered backoff, not by mqtt.js's fixed period.
        reconnectPeriod: 0,
        connectTimeout: 10_000,
        queueQoSZero: false,
        // The agent's subscription registry subscribes after every CONNACK; no second copy.
        resubscribe: false,
        ...(config.username !== undefined ? { username: config.username } : {}),
        ...(config.password !== undefined ? { password: config.password } : {}),
        ...(ca ? { ca } : {}),
        ...(cert ? { cert } : {}),
        ...(key ? { key } : {}),
        ...(secure ? { rejectUnauthorized: true } : {}),
        will: {
            topic: will.topic,
            payload: Buffer.from(will.payload),
            qos: 1,
            retain: true,
        },
    };
}
//# sourceMappingURL=connection.js.map