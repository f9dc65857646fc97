// bench/outbox: how fast a board empties its outbox after a reconnect. 10,000 queued telemetry messages are
// drained (rate limit off) over one MQTT connection to a local mosquitto, from SQLite, with QoS 1 and
// deletion on PUBACK; the baseline is `mosquitto_pub -l` publishing the same payloads at QoS 1 over one
// connection, in the same run. Target: at least 0.5× the baseline's rate.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'mqtt';
import { defaultTelemetryConfig } from '../agent/config/sections/telemetry.js';
import { openStore } from '../agent/store/database.js';
import { OutboxDrainer, type QosPublisher } from '../agent/telemetry/drain.js';
import { Outbox } from '../agent/telemetry/outbox.js';
import { systemClock } from '../lib/clock.js';
import { createLogger } from '../lib/log.js';
import { startMosquitto } from '../test/helpers/mosquitto.js';
import { bar, check, describe, fmt, summarize } from './lib/stats.js';

const COUNT = Number(process.env['BENCH_OUTBOX_COUNT'] ?? 10_000);
const RUNS = Number(process.env['BENCH_OUTBOX_RUNS'] ?? 3);
const TOPIC = 'mnn-edge/bench-dev/telemetry';
const MOSQUITTO_PUB = '/usr/bin/mosquitto_pub';

function payload(seq: number): string {
  // Shaped like a real telemetry message (~300 bytes), one line each for mosquitto_pub -l.
  return JSON.stringify({
    v: 1,
    deviceId: 'bench-dev',
    seq,
    ts: 1_800_000_000_000 + seq,
    intervalMs: 30_000,
    expiresAt: 1_800_600_000_000,
    metrics: {
      'cpu.load_pct': { min: 3.1, mean: 7.4, max: 22.9, n: 6 },
      'mem.used_pct': { min: 41.2, mean: 41.3, max: 41.5, n: 6 },
      'temp.soc_c': { min: 48, mean: 49.2, max: 51, n: 6 },
    },
    slots: { chat: { model: 'qwen2.5-0.5b', backend: 'cpu', requests: 12, errors: 0 } },
    outbox: { queued: 0, dropped: { expired: 0, overflow: 0, diskFull: 0 } },
  });
}

async function baselineRun(port: number, lines: string): Promise<number> {
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const p = spawn(
      MOSQUITTO_PUB,
      ['-h', '127.0.0.1', '-p', String(port), '-q', '1', '-t', TOPIC, '-l', '-V', 'mqttv5'],
      {
        stdio: ['pipe', 'ignore', 'inherit'],
      },
    );
    p.once('error', reject);
    p.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`mosquitto_pub exited with ${code}`)),
    );
    p.stdin.end(lines);
  });
  return (COUNT / (performance.now() - started)) * 1000;
}

async function outboxRun(url: string, dir: string, run: number): Promise<number> {
  const db = openStore(join(dir, `outbox-${run}.db`));
  const logger = createLogger({ level: 'warn' });
  const outbox = new Outbox({ db, config: defaultTelemetryConfig.outbox, clock: systemClock, logger });
  for (let i = 0; i < COUNT; i++) outbox.enqueue(TOPIC, payload);
  outbox.flush();
  const client = connect(url, { protocolVersion: 5, clientId: `bench-outbox-${run}`, reconnectPeriod: 0 });
  await new Promise<void>((resolve) => client.once('connect', () => resolve()));
  const publisher: QosPublisher = {
    get connected() {
      return client.connected;
    },
    publish(m, done) {
      client.publish(m.topic, m.payload, { qos: 1 }, (err) => done(err ?? undefined));
    },
  };
  // The timed part is what happens after a reconnect: read in order, publish, delete on PUBACK, commit.
  const started = performance.now();
  const drainer = new OutboxDrainer({
    outbox,
    publisher,
    maxInflight: defaultTelemetryConfig.outbox.maxInflight,
    ratePerSec: 0,
    clock: systemClock,
    logger,
  });
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (drainer.stats().acknowledged >= COUNT) {
        clearInterval(check);
        resolve();
      }
    }, 1);
    drainer.kick();
  });
  outbox.flush();
  const elapsed = performance.now() - started;
  if (outbox.stats().queued !== 0) throw new Error(`outbox not empty after drain: ${outbox.stats().queued}`);
  drainer.stop();
  outbox.close();
  db.close();
  await client.endAsync();
  return (COUNT / elapsed) * 1000;
}

if (!existsSync(MOSQUITTO_PUB)) {
  console.error('mosquitto_pub not found: run scripts/install-test-deps.sh (apt: mosquitto-clients)');
  process.exit(1);
}
const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-outbox-'));
const broker = await startMosquitto();
try {
  const lines = Array.from({ length: COUNT }, (_, i) => payload(i + 1)).join('\n') + '\n';
  const base: number[] = [];
  const ours: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    // Alternate so that drift in the machine's load affects both sides alike.
    base.push(await baselineRun(broker.port, lines));
    ours.push(await outboxRun(broker.url, dir, r));
  }
  const b = summarize(base);
  const o = summarize(ours);
  const ratio = o.median / b.median;
  console.log(`${COUNT} messages, QoS 1, one connection to a local mosquitto, ${RUNS} runs each`);
  console.log(`mosquitto_pub -l (baseline): ${describe(b, 'msg/s', 0)}`);
  console.log(`outbox drain (SQLite → MQTT, delete on PUBACK): ${describe(o, 'msg/s', 0)}`);
  const scale = Math.max(b.median, o.median);
  console.log(bar('mosquitto_pub -l', b.median, scale, `${fmt(b.median, 0)} msg/s  1.00x`));
  console.log(bar('outbox drain', o.median, scale, `${fmt(o.median, 0)} msg/s  ${fmt(ratio)}x`));
  console.log(
    `target ≥ 0.5x of baseline: ${check('outbox drain vs mosquitto_pub -l', ratio, 'x', '≥ 0.5', ratio >= 0.5)} (${fmt(ratio)}x)`,
  );
} finally {
  await broker.close();
  rmSync(dir, { recursive: true, force: true });
}
