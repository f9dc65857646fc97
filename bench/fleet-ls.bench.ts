// `fleet ls` on its own (`npm run bench -- fleet-ls`): a mosquitto holding the retained documents of FLEET_LS_N
// boards (default 5,000) and no board running, so that the figure is the operator's own cost: the subscribe, the
// retained burst, parsing and checking every document, the quiet wait. bench/fleet measures `fleet ls` beside the
// simulated boards, which on a 2-core machine share the CPU with the broker and the operator (N = 5,000 in five
// simulator processes took 4.76 s there, docs/FLEET.md); this separates the two.
// The documents are a real agent's (`mnn-edge run` on the RK3588 capture), copied under N ids.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { FleetOperator } from '../agent/operator/fleet/operator.js';
import { DOCUMENT_KINDS } from '../lib/topics.js';
import { startMosquitto } from '../test/helpers/mosquitto.js';
import { socFixturesDir } from '../test/helpers/paths.js';
import { spawnAgentRun } from '../test/helpers/run-agent.js';
import { until } from '../test/helpers/until.js';
import { check, fmt, loadLine, summarize } from './lib/stats.js';

const N = Number(process.env['FLEET_LS_N'] ?? 5000);
const ROUNDS = 5;

/**
 * A real agent's retained documents (topic → payload): `mnn-edge run` on the RK3588 capture (shared/fixtures/soc),
 * pointed at the broker, until its status and every document kind are retained.
 */
async function oneAgentsRetained(
  url: string,
  dir: string,
): Promise<{ id: string; kept: [string, Buffer][] }> {
  const c = await mqtt.connectAsync(url, { protocolVersion: 5 });
  const kept = new Map<string, Buffer>();
  c.on('message', (topic, payload, packet) => {
    if (packet.retain || payload.length > 0) kept.set(topic, payload);
  });
  await c.subscribeAsync(['mnn-edge/+/status', ...DOCUMENT_KINDS.map((k) => `mnn-edge/+/${k}`)], { qos: 1 });
  const agent = spawnAgentRun(join(dir, 'agent'), {
    config: { mqtt: { url }, root: join(socFixturesDir, 'rockchip-rk3588-rock5b') },
  });
  try {
    await until(
      () => kept.size >= 1 + DOCUMENT_KINDS.length,
      'the agent to retain its status and documents',
      {
        timeoutMs: 120_000,
        stepMs: 100,
      },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; it retained only ${[...kept.keys()].join(', ') || 'nothing'}`);
    });
  } finally {
    agent.kill('SIGKILL');
  }
  await c.endAsync();
  const id = [...kept.keys()][0]!.split('/')[1]!;
  return { id, kept: [...kept] };
}

const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-fleet-ls-'));
const broker = await startMosquitto();
try {
  const { id, kept } = await oneAgentsRetained(broker.url, dir);
  const bytes = kept.reduce((sum, [, p]) => sum + p.length, 0);
  console.log(
    `one agent's retained documents: ${kept.map(([t]) => t.split('/').at(-1)).join(', ')} (${bytes} bytes)`,
  );
  const c = await mqtt.connectAsync(broker.url, { protocolVersion: 5 });
  for (let i = 0; i < N; i++) {
    const other = `ls-${String(i + 1).padStart(5, '0')}`;
    await Promise.all(
      kept.map(([topic, payload]) =>
        c.publishAsync(topic.split(id).join(other), Buffer.from(payload.toString().split(id).join(other)), {
          qos: 1,
          retain: true,
        }),
      ),
    );
  }
  await c.endAsync();
  console.log(`${N} boards' documents retained; ${loadLine()}`);
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const op = await FleetOperator.connect({ url: broker.url, protocolVersion: 5 });
    const t0 = performance.now();
    const listed = await op.listDevices(300);
    times.push((performance.now() - t0) / 1000);
    await op.close();
    console.log(
      `  fleet ls: ${listed.length} listed in ${fmt(times.at(-1)!)} s (300 ms of it the quiet wait)`,
    );
    if (listed.length !== N + 1) throw new Error(`fleet ls listed ${listed.length} boards, not ${N + 1}`);
  }
  const { median } = summarize(times);
  console.log(`median of ${ROUNDS}: ${fmt(median)} s; ${loadLine()}`);
  check(
    `fleet ls of ${N} boards' retained documents, no board running (median of ${ROUNDS})`,
    median,
    's',
    '<= 2',
    median <= 2,
  );
} finally {
  await broker.close();
  rmSync(dir, { recursive: true, force: true });
}
// The MQTT client library keeps timers of its own after end(); the figures are written.
process.exit(0);
