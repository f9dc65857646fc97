import type { IClientPublishOptions } from 'mqtt';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/log.js';
import type { Db } from '../../lib/sqlite/database.js';
import type { TelemetryConfig } from '../config/sections/telemetry.js';
import { OutboxDrainer, type QosPublisher } from '../telemetry/drain.js';
import { TelemetryHistory } from '../telemetry/history.js';
import { Outbox } from '../telemetry/outbox.js';
import type { RuntimeStatsProvider, WorkloadMetricsProvider } from '../telemetry/runtime-stats.js';
import { defaultSamplers, type Sampler } from '../telemetry/samplers.js';
import { TelemetryService } from '../telemetry/service.js';
import type { AgentConnection } from './agent-connection.js';

// The fleet agent's durable telemetry: samples go into the SQLite outbox (and the local history), and the drainer
// hands them to whatever connection is current, at a bounded rate, with the time they have left to live.

export interface TelemetryPipelineOptions {
  config: TelemetryConfig;
  db: Db;
  deviceId: string;
  topic: string;
  connection: AgentConnection;
  clock: Clock;
  logger: Logger;
  /** Where the system samplers look: `/` on a board; the disk sampler watches the data directory. */
  root: string;
  dataDir: string;
  samplers?: readonly Sampler[];
  runtime?: RuntimeStatsProvider;
  workloads?: WorkloadMetricsProvider;
  /** After every snapshot (Home Assistant re-announces when the set of entities changed). */
  onSnapshot: () => void;
}

/** The outbox's publisher: QoS 1 on the current connection, with the message's remaining life as its expiry. */
function outboxPublisher(connection: AgentConnection, telemetryTopic: string, clock: Clock): QosPublisher {
  return {
    get connected() {
      return connection.connected;
    },
    publish(m, done) {
      const link = connection.link;
      if (link === undefined) return done(new Error('not connected'));
      // Telemetry is also retained, so a new subscriber (`fleet ls`) sees the latest at once. Brokers set the
      // retain flag only on that on-subscribe copy, never on live forwards: sequence counters skip it.
      const opts: IClientPublishOptions = { qos: 1, retain: m.topic === telemetryTopic };
      if (connection.v5) {
        // The drainer never hands over an expired message, so at least one second remains.
        opts.properties = {
          messageExpiryInterval: Math.max(1, Math.ceil((m.expiresAt - clock.nowMs()) / 1000)),
        };
      }
      link.publish(m.topic, m.payload, opts, done);
    },
  };
}

export function createTelemetryPipeline(o: TelemetryPipelineOptions) {
  const { config, db, clock, logger } = o;
  const outbox = new Outbox({ db, config: config.outbox, clock, logger: logger.child('outbox') });
  const history = new TelemetryHistory(db, config.history, clock);
  const drainer = new OutboxDrainer({
    outbox,
    publisher: outboxPublisher(o.connection, o.topic, clock),
    maxInflight: config.outbox.maxInflight,
    ratePerSec: config.outbox.drainRatePerSec,
    clock,
    logger: logger.child('drain'),
  });
  const telemetry = config.enabled
    ? new TelemetryService({
        deviceId: o.deviceId,
        topic: o.topic,
        config,
        db,
        outbox,
        history,
        samplers:
          o.samplers ?? defaultSamplers({ root: o.root, dataDir: o.dataDir, monotonicMs: clock.monotonicMs }),
        ...(o.runtime ? { runtime: o.runtime } : {}),
        ...(o.workloads ? { workloads: o.workloads } : {}),
        clock,
        logger: logger.child('telemetry'),
        onSnapshot: o.onSnapshot,
      })
    : undefined;
  return { outbox, history, drainer, telemetry };
}
