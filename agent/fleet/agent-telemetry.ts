import type { IClientPublishOptions } from 'mqtt';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/log.js';
import type { Db } from '../../lib/sqlite/database.js';
import type { TelemetryConfig } from '../config/sections/telemetry.js';
import { type BoardTelemetry, createBoardTelemetry } from '../telemetry/board.js';
import { OutboxDrainer, type QosPublisher } from '../telemetry/drain.js';
import { Outbox } from '../telemetry/outbox.js';
import type { RuntimeStatsProvider, WorkloadMetricsProvider } from '../telemetry/runtime-stats.js';
import type { Sampler } from '../telemetry/samplers.js';
import type { AgentConnection } from './agent-connection.js';

// The fleet agent's durable telemetry: the board's intervals go into the SQLite outbox, and the drainer hands them
// to whatever connection is current, at a bounded rate, with the time they have left to live.

export interface TelemetryPipelineOptions {
  config: TelemetryConfig;
  db: Db;
  deviceId: string;
  topic: string;
  connection: AgentConnection;
  clock: Clock;
  logger: Logger;
  /** The agent's board telemetry, which the fleet delivers; without it the fleet agent samples for itself. */
  board?: BoardTelemetry;
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
  const drainer = new OutboxDrainer({
    outbox,
    publisher: outboxPublisher(o.connection, o.topic, clock),
    maxInflight: config.outbox.maxInflight,
    ratePerSec: config.outbox.drainRatePerSec,
    clock,
    logger: logger.child('drain'),
  });
  // The agent's board telemetry when composed (agent/telemetry/module.ts); a fleet agent on its own (the tests,
  // the fleet simulator) samples for itself.
  const board =
    o.board ??
    createBoardTelemetry({
      config,
      db,
      deviceId: o.deviceId,
      clock,
      logger: logger.child('telemetry'),
      root: o.root,
      dataDir: o.dataDir,
      ...(o.samplers ? { samplers: o.samplers } : {}),
      ...(o.runtime ? { runtime: o.runtime } : {}),
      ...(o.workloads ? { workloads: o.workloads } : {}),
    });
  const telemetry = board.service;
  const detach: Array<() => void> = [];
  return {
    outbox,
    history: board.history,
    drainer,
    telemetry,
    /** Whether the pipeline samples for itself, and so starts and stops the sampling with the fleet. */
    ownsSampling: o.board === undefined,
    /** The fleet runs: the intervals go into the outbox, and each one's listener runs. */
    attach(): void {
      if (!telemetry) return;
      detach.push(telemetry.deliverTo({ outbox, topic: o.topic }), telemetry.onSnapshot(o.onSnapshot));
    },
    detach(): void {
      for (const d of detach.splice(0)) d();
    },
  };
}
