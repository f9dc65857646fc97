import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { connect } from 'mqtt';
import { SLOT_NAMES } from '../../agent/plan/types.js';
import { deviceTopics } from '../../lib/topics.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';
import { socFixturesDir } from '../helpers/paths.js';
import {
  codes,
  documentedFamilies,
  documentedTelemetry,
  type ParsedFamily,
  parseExposition as parse,
  protocolDoc,
  table,
} from '../helpers/protocol-doc.js';
import { spawnAgentRun } from '../helpers/run-agent.js';
import { until } from '../helpers/until.js';

// The names on the wire, read from the real agent (`mnn-edge run`, its own process, every module composed) and
// held to the documents integrators read: each telemetry metric it publishes over MQTT (docs/PROTOCOL.md), each
// Home Assistant entity it announces, and each /metrics family (docs/METRICS.md), with the timer census on so
// that its optional names are published too. A second agent runs with no broker at all: the board's samples
// still reach /metrics and the dashboard's telemetry. (protocol-doc-contract.test.ts checks the other way round:
// that every documented name is produced.)

const BOARD = join(socFixturesDir, 'qcom-qcs9075-iq9075-evk');
/** Short intervals so a message comes within a second or two; the names do not depend on them. */
const FAST_TELEMETRY = { sampleIntervalMs: 200, publishIntervalMs: 1000 };
const BOARD_FAMILIES = [
  'mnn_edge_board_cpu_usage_ratio',
  'mnn_edge_board_memory_used_bytes',
  'mnn_edge_board_memory_available_bytes',
  'mnn_edge_board_temperature_celsius',
];

interface RunningAgent {
  url: string;
  token: string;
  log: () => string;
}

async function runAgent(
  t: ExecutionContext,
  config: Record<string, unknown>,
  env: NodeJS.ProcessEnv = {},
): Promise<RunningAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-wire-names-'));
  const dataDir = join(dir, 'data');
  const child = spawnAgentRun(dataDir, { config: { root: BOARD, ...config }, env });
  let out = '';
  let exited = false;
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  child.once('exit', () => (exited = true));
  t.teardown(() => {
    if (!exited) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  let port = 0;
  await until(() => {
    if (exited) throw new Error(`the agent exited:\n${out.slice(-2000)}`);
    port = Number(/"msg":"listening".*?"port":(\d+)/.exec(out)?.[1] ?? 0);
    return port > 0;
  }, 'the agent listening');
  const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
  return { url: `http://127.0.0.1:${port}`, token, log: () => out };
}

async function families(agent: RunningAgent): Promise<ParsedFamily[]> {
  const res = await fetch(`${agent.url}/metrics`, { headers: { Authorization: `Bearer ${agent.token}` } });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return parse(await res.text());
}

/** Every family the agent serves is in docs/METRICS.md with its type. */
function undocumentedFamilies(served: ParsedFamily[]): string[] {
  const documented = documentedFamilies();
  return served
    .filter((f) => documented.get(f.name) !== f.type.toLowerCase())
    .map((f) => `${f.name} (${f.type})`);
}

/** docs/PROTOCOL.md's Home Assistant entities as patterns over the announced `name (platform)`. */
function documentedEntities(): RegExp[] {
  const slots = SLOT_NAMES.map((s) => s.replace(/\./g, '\\.')).join('|');
  return table(protocolDoc, 'entity').map(([entity, platform]) => {
    const name = codes(entity!)[0]!
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      .replace('<slot>', `(?:${slots})`)
      .replace('<zone>', '[A-Za-z0-9_-]+');
    return new RegExp(`^${name} \\(${platform}\\)$`);
  });
}

if (!mosquittoAvailable()) {
  test('wire names (skipped: mosquitto not installed; run scripts/install-test-deps.sh)', (t) => t.pass());
} else {
  test('every telemetry name, Home Assistant entity and /metrics family the running agent publishes is documented', async (t) => {
    const broker = await startMosquitto();
    t.teardown(() => broker.close());
    const deviceId = 'wire-names-1';
    const topics = deviceTopics(deviceId);
    const client = connect(broker.url, { reconnectPeriod: 0 });
    t.teardown(() => void client.endAsync(true));
    const telemetry: Array<{ metrics: Record<string, unknown> }> = [];
    const discovery: Array<{ cmps: Record<string, { name?: string; p: string }> }> = [];
    client.on('message', (topic, payload) => {
      if (payload.length === 0) return;
      const doc = JSON.parse(payload.toString('utf8'));
      if (topic === topics.telemetry) telemetry.push(doc);
      else if (topic.startsWith('homeassistant/device/')) discovery.push(doc);
    });
    await client.subscribeAsync([topics.telemetry, `homeassistant/device/${topics.segment}/config`], {
      qos: 1,
    });

    const agent = await runAgent(
      t,
      { deviceId, mqtt: { url: broker.url }, telemetry: FAST_TELEMETRY },
      { MNN_EDGE_TIMER_CENSUS: '1' },
    );
    await until(() => telemetry.length >= 2 && discovery.length >= 1, 'two telemetry messages and discovery');

    const patterns = documentedTelemetry();
    const names = [...new Set(telemetry.flatMap((m) => Object.keys(m.metrics)))].sort();
    // The board's own samples and the agent process's, the census' count among them.
    for (const expected of ['cpu.load_pct', 'mem.used_bytes', 'agent.rss_bytes', 'agent.timers_all'])
      t.true(names.includes(expected), `${expected} in ${names.join(', ')}`);
    t.deepEqual(
      names.filter((n) => !patterns.some((p) => p.re.test(n))),
      [],
      'published over MQTT but not in docs/PROTOCOL.md',
    );

    const entities = documentedEntities();
    const announced = Object.values(discovery.at(-1)!.cmps)
      .filter((c) => c.name !== undefined)
      .map((c) => `${c.name} (${c.p})`);
    t.true(announced.length > 0);
    t.deepEqual(
      announced.filter((a) => !entities.some((re) => re.test(a))),
      [],
      'announced to Home Assistant but not in docs/PROTOCOL.md',
    );

    const served = await families(agent);
    t.deepEqual(undocumentedFamilies(served), [], 'served on /metrics but not in docs/METRICS.md');
    for (const name of BOARD_FAMILIES)
      t.true(
        served.some((f) => f.name === name),
        name,
      );
  });
}

test('with no broker at all the board is still sampled: /metrics carries the board families, the dashboard its charts', async (t) => {
  const agent = await runAgent(t, {
    mqtt: { embeddedBroker: { enabled: false } },
    telemetry: FAST_TELEMETRY,
  });
  let served: ParsedFamily[] = [];
  await until(
    async () => {
      served = await families(agent);
      return BOARD_FAMILIES.every((name) => served.some((f) => f.name === name));
    },
    'the board families on /metrics',
    { stepMs: 200 },
  );
  t.deepEqual(undocumentedFamilies(served), []);
  t.false(
    served.some((f) => f.name === 'mnn_edge_mqtt_connected'),
    'no MQTT series without MQTT',
  );
  t.regex(agent.log(), /The fleet is off/);
  const res = await fetch(`${agent.url}/api/telemetry/metrics`, {
    headers: { Authorization: `Bearer ${agent.token}` },
  });
  t.is(res.status, 200);
  const { metrics } = (await res.json()) as { metrics: string[] };
  t.true(metrics.includes('cpu.load_pct'), metrics.join(', '));
});
