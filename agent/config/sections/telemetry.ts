import type { JsonSchema } from '../../../lib/schema.js';

export interface OutboxConfig {
  /** Bounded disk use: beyond either limit the oldest messages are dropped (and counted). */
  maxMessages: number;
  maxBytes: number;
  /** How long a telemetry message stays worth delivering; also sent as MQTT 5 message expiry. */
  messageExpirySec: number;
  /** Messages are committed (one fsync) at most this often: the loss window on a power cut, while the agent's
   *  timers run on time. */
  flushIntervalMs: number;
  /** A commit as soon as this many new messages wait uncommitted, however late the flush timer runs (a starved
   *  CPU): the most messages a power cut can lose. */
  flushMaxMessages: number;
  /** The same for acknowledgements (PUBACKs) waiting to be committed: the most messages a power cut can have
   *  delivered again, besides the `maxInflight` awaiting their PUBACK. Larger, because a drain after an outage
   *  acknowledges hundreds a second, and each commit is an fsync. */
  flushMaxAcks: number;
  /** Drain rate after a reconnect, messages per second; 0 = unlimited. */
  drainRatePerSec: number;
  /** QoS 1 messages in flight (published, no PUBACK yet) at once. */
  maxInflight: number;
}

export interface HistoryConfig {
  /** Width of one downsampled point. */
  bucketSec: number;
  retentionHours: number;
}

export interface TelemetryConfig {
  enabled: boolean;
  /** How often the samplers read the system. */
  sampleIntervalMs: number;
  /** How often one aggregated (min/mean/max) telemetry message is produced. */
  publishIntervalMs: number;
  /** Retention sweep and VACUUM check. */
  maintenanceIntervalMs: number;
  outbox: OutboxConfig;
  history: HistoryConfig;
}

/** What a configuration file may give: any subset, defaults fill the rest. */
export type TelemetryConfigInput = Partial<Omit<TelemetryConfig, 'outbox' | 'history'>> & {
  outbox?: Partial<OutboxConfig>;
  history?: Partial<HistoryConfig>;
};

export const defaultTelemetryConfig: TelemetryConfig = {
  enabled: true,
  sampleIntervalMs: 5_000,
  publishIntervalMs: 30_000,
  maintenanceIntervalMs: 6 * 3_600_000,
  outbox: {
    maxMessages: 50_000,
    maxBytes: 64 * 1024 * 1024,
    messageExpirySec: 7 * 86_400,
    flushIntervalMs: 5_000,
    flushMaxMessages: 10,
    flushMaxAcks: 200,
    drainRatePerSec: 200,
    maxInflight: 32,
  },
  history: { bucketSec: 60, retentionHours: 24 },
};

/** A configuration's telemetry section over the defaults, section by section. */
export function resolveTelemetryConfig(partial: TelemetryConfigInput | undefined): TelemetryConfig {
  const d = defaultTelemetryConfig;
  return {
    ...d,
    ...partial,
    outbox: { ...d.outbox, ...partial?.outbox },
    history: { ...d.history, ...partial?.history },
  };
}

const positiveInt = (minimum: number, description?: string): JsonSchema => ({
  type: 'integer',
  minimum,
  ...(description ? { description } : {}),
});

export const telemetrySchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    sampleIntervalMs: positiveInt(50),
    publishIntervalMs: positiveInt(50),
    maintenanceIntervalMs: positiveInt(1000),
    outbox: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxMessages: positiveInt(1),
        maxBytes: positiveInt(1024),
        messageExpirySec: positiveInt(1),
        flushIntervalMs: positiveInt(0, '0 commits every message (no loss window, one fsync each).'),
        flushMaxMessages: positiveInt(
          1,
          'Commit once this many new messages wait: the most a power cut loses, even with late timers.',
        ),
        flushMaxAcks: positiveInt(
          1,
          'Commit once this many acknowledgements wait: the most a power cut delivers again, besides maxInflight.',
        ),
        drainRatePerSec: positiveInt(0, '0 = unlimited.'),
        maxInflight: positiveInt(1),
      },
    },
    history: {
      type: 'object',
      additionalProperties: false,
      properties: { bucketSec: positiveInt(1), retentionHours: positiveInt(1) },
    },
  },
};
