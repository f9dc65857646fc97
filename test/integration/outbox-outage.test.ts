import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { connect } from 'mqtt';
import { createFleetAgent, type FleetAgent } from '../../agent/fleet/agent.js';
import type { TelemetryMessage } from '../../agent/fleet/protocol.js';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { type Db, openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { deviceTopics } from '../../lib/topics.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

// Telemetry keeps flowing through a broker outage during which the agent itself restarts: every sequence
// number reaches a subscriber that holds a persistent session, none is missing; duplicates only where QoS 1
// allows them (a PUBACK lost with the broker), and counted.

const deviceId = 'outage-dev';

function agentOn(url: string, db: Db): FleetAgent {
  return createFleetAgent({
    config: {
      mqtt: {
        url,
        protocolVersion: 5,
        embeddedBroker: { enabled: false, port: 0, host: '127.0.0.1' },
        reconnect: { minMs: 50, maxMs: 150 },
      },
      telemetry: {
        sampleIntervalMs: 20,
        publishIntervalMs: 40,
        outbox: {
          maxMessages: 10_000,
          maxBytes: 16 * 1024 * 1024,
          messageExpirySec: 600,
          flushIntervalMs: 25,
          drainRatePerSec: 0,
          maxInflight: 8,
        },
      },
      root: '/nonexistent',
      dataDir: '/tmp',
    },
    db,
    logger: createMemoryLogger(),
    deviceId,
    tags: [],
    board: () => undefined,
    clock: systemClock,
    agentVersion: 'test',
    samplers: [{ name: 'tick', sample: async () => ({ 'cpu.load_pct': 1 }) }],
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (cond()) return true;
    await sleep(20);
  }
  return cond();
}

test('outage with agent restart: every sequence number arrives, none missing', async (t) => {
  if (!mosquittoAvailable()) return t.fail('mosquitto is not installed (scripts/install-test-deps.sh)');
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-outage-'));
  const broker = await startMosquitto({ persistence: true });
  const dbPath = join(dir, 'agent.db');
  const seen = new Map<number, number>();
  const subscriber = connect(broker.url, {
    protocolVersion: 5,
    clientId: 'outage-consumer',
    clean: false,
    properties: { sessionExpiryInterval: 3600 },
    reconnectPeriod: 100,
  });
  subscriber.on('error', () => undefined);
  const sessions: boolean[] = [];
  subscriber.on('connect', (p) => sessions.push(p.sessionPresent));
  let retainedCopies = 0;
  subscriber.on('message', (_topic, payload, packet) => {
    // The on-subscribe copy of the retained latest telemetry is not part of the stream (docs/PROTOCOL.md).
    if (packet.retain) {
      retainedCopies++;
      return;
    }
    const m = JSON.parse(payload.toString()) as TelemetryMessage;
    seen.set(m.seq, (seen.get(m.seq) ?? 0) + 1);
  });
  await new Promise<void>((resolve) => subscriber.once('connect', () => resolve()));
  await subscriber.subscribeAsync(deviceTopics(deviceId).telemetry, { qos: 1 });
  const agents: FleetAgent[] = [];
  const dbs: Db[] = [];
  const open = () => {
    const db = openStore(dbPath);
    dbs.push(db);
    return db;
  };
  try {
    const first = agentOn(broker.url, open());
    agents.push(first);
    await first.start();
    t.true(await until(() => seen.size >= 5, 5_000), 'telemetry flows before the outage');

    await broker.stop();
    await sleep(300); // the agent keeps producing into its outbox
    await first.stop(); // agent restart in the middle of the outage
    const producedByFirst = first.outbox.stats().nextSeq - 1;
    const second = agentOn(broker.url, open());
    agents.push(second);
    await second.start();
    await sleep(300);
    t.true(second.outbox.stats().queued > 0, 'messages are waiting in the outbox');
    t.true(second.outbox.stats().nextSeq > producedByFirst + 1, 'sequence continues after the restart');

    await broker.start();
    t.true(await until(() => second.connected, 5_000), 'agent reconnects');
    const op = await FleetOperator.connect({ url: broker.url });
    const [pong] = await op.command({ deviceId }, 'ping');
    t.true(pong?.ok, 'commands reach the agent again after the broker restart');
    await op.close();
    second.telemetry?.stop();
    await second.telemetry?.publish(); // close the last interval so no sample is left unsent
    second.outbox.flush();
    const last = second.outbox.stats().nextSeq - 1;
    const complete = () => {
      for (let s = 1; s <= last; s++) if (!seen.has(s)) return false;
      return true;
    };
    await until(complete, 10_000);
    const missing: number[] = [];
    for (let s = 1; s <= last; s++) if (!seen.has(s)) missing.push(s);
    const duplicates = [...seen.values()].filter((n) => n > 1).length;
    t.is(sessions.at(-1), true, 'the consumer got its persistent session back');
    if (missing.length > 0) t.log(broker.log());
    t.log(
      `sequence 1..${last}: ${missing.length} missing, ${duplicates} delivered more than once (QoS 1), ${retainedCopies} retained copies skipped`,
    );
    t.deepEqual(missing, []);
    t.true(await until(() => second.outbox.stats().queued === 0, 3_000), 'outbox empties on PUBACKs');
    t.deepEqual(second.outbox.stats().dropped, { expired: 0, overflow: 0, diskFull: 0 });
  } finally {
    for (const a of agents) await a.stop();
    for (const db of dbs) db.close();
    await subscriber.endAsync(true);
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
