import { readFileSync } from 'node:fs';
import type { IClientOptions } from 'mqtt';
import { MnnEdgeError } from '../../lib/errors.js';
import { backoffDelay } from '../../lib/mqtt/backoff.js';
import type { MqttConfig } from '../config/sections/mqtt.js';

// The mqtt.js client options of one connection attempt: URL scheme picks the transport (mqtt, mqtts, ws, wss),
// credentials are per device, TLS may verify the broker against a CA and present a client certificate (mTLS).
// Reconnects use full-jitter exponential backoff so a fleet that lost its broker does not come back in
// lockstep. Of the fleet's three connection files this is the one attempt; broker-link.ts retries attempts
// for as long as the agent runs, and agent-connection.ts picks the broker and announces the device on it.

export { backoffDelay };

export const DEFAULT_RECONNECT = { minMs: 1_000, maxMs: 60_000 };
export const DEFAULT_KEEPALIVE_SEC = 30;
export const DEFAULT_SESSION_EXPIRY_SEC = 3600;

export interface ConnectionTarget {
  url: string;
  protocolVersion: 4 | 5;
}

export interface WillMessage {
  topic: string;
  payload: string;
}

function readPem(path: string | undefined, what: string): Buffer | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new MnnEdgeError('ECONFIG', `Cannot read mqtt.${what} ${path}: ${(err as Error).message}`);
  }
}

export function buildClientOptions(
  config: MqttConfig,
  target: ConnectionTarget,
  clientId: string,
  will: WillMessage,
): IClientOptions {
  const secure = /^(mqtts|wss):/.test(target.url);
  if ((config.cert === undefined) !== (config.key === undefined))
    throw new MnnEdgeError(
      'ECONFIG',
      'mqtt.cert and mqtt.key must be given together for a client certificate',
    );
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
    // mqtt-packet otherwise pre-builds a 2-byte Buffer for every 16-bit number (65536 of them, 6.3 MB of heap,
    // a tenth of the idle agent; bench/idle) on its first write. The switch is process-wide, so it covers the
    // embedded broker's writes too; a number built per packet costs nothing at the agent's message rates.
    writeCache: false,
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
