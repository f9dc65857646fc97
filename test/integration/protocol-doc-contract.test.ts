import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { composeModules } from '../../agent/compose.js';
import { defaultConfig } from '../../agent/config/defaults.js';
import type { AgentConfig } from '../../agent/config/schema.js';
import { mqttSchema } from '../../agent/config/sections/mqtt.js';
import { buildHaDiscovery, haDiscoveryTopic } from '../../agent/fleet/ha-discovery.js';
import { ERROR_CODES } from '../../agent/fleet/protocol.js';
import { createAgent } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { slotGauges } from '../../agent/telemetry/runtime-stats.js';
import {
  cpuSampler,
  diskSampler,
  memorySampler,
  networkSampler,
  processSampler,
  thermalSampler,
} from '../../agent/telemetry/samplers.js';
import { startTimerCensus } from '../../agent/telemetry/timer-census.js';
import { VoiceTurnStore } from '../../agent/workloads/voice/turn-store.js';
import { createMemoryLogger } from '../../lib/log.js';
import { validate } from '../../lib/schema.js';
import { DOCUMENT_KINDS, deviceTopics } from '../../lib/topics.js';
import { otaTopics } from '../../ota/jobs/job.js';
import { repoRoot, socFixturesDir } from '../helpers/paths.js';
import { codes, metricPattern, protocolDoc, table } from '../helpers/protocol-doc.js';

// docs/PROTOCOL.md is the contract other people build against. Its tables are read here and compared with
// what the code does — the topics the agent subscribes to and publishes on, every command and its params, the
// error codes, the metric names, the Home Assistant entities — and docs/CONFIG.md's mqtt table with the config
// schema. When either side drifts, this fails and names the difference.

const configDoc = readFileSync(join(repoRoot, 'docs', 'CONFIG.md'), 'utf8');

const DEVICE = 'edge-7.lab';
const TAG = 'lab';

interface Running {
  agent: ReturnType<typeof createAgent>;
  services: ReturnType<typeof composeModules>['services'];
  dir: string;
}

let running: Promise<Running> | undefined;

/** The agent as `mnn-edge run` composes it, pointed at a broker that is not there (it never waits for one). */
function composedAgent(): Promise<Running> {
  running ??= startComposedAgent();
  return running;
}

async function startComposedAgent(): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-doc-contract-'));
  const base = defaultConfig({});
  const config: AgentConfig = {
    ...base,
    dataDir: join(dir, 'data'),
    root: join(socFixturesDir, 'qcom-qcs9075-iq9075-evk'),
    deviceId: DEVICE,
    tags: [TAG],
    http: { ...base.http, bind: '127.0.0.1', port: 0 },
    mqtt: { ...base.mqtt, url: 'mqtt://127.0.0.1:1', reconnect: { minMs: 60_000, maxMs: 60_000 } },
  };
  const composed = composeModules(config, { agentVersion: '0.0.0-doc' });
  const agent = createAgent(config, {
    logger: createMemoryLogger(),
    version: '0.0.0-doc',
    modules: composed.modules,
  });
  await agent.start();
  return { agent, services: composed.services, dir };
}

test.after.always(async () => {
  if (!running) return;
  const { agent, dir } = await running;
  await agent.stop('test done');
  rmSync(dir, { recursive: true, force: true });
});

/** The doc's placeholders made concrete; `<name>` becomes the wildcard a subscriber uses. */
function concrete(topic: string, name: string): string {
  return topic
    .replace('<id>', deviceTopics(DEVICE).segment)
    .replace('<tag>', TAG)
    .replace('<name>', name)
    .replace('[/…]', '');
}

test('topics: the device subscribes to exactly the documented filters, every inbound topic among them', async (t) => {
  const { services } = await composedAgent();
  const inbound = table(protocolDoc, 'topic')
    .filter(([, direction]) => /→ devices?$/.test(direction!))
    .map(([topic]) => concrete(codes(topic!)[0]!, '+'));
  // "Subscriptions and their QoS": every filter the device holds, its own status (read back) included.
  const filters = table(protocolDoc, 'filter').map(([filter]) => concrete(codes(filter!)[0]!, '+'));
  const subscribed = services
    .fleet()
    .agent!.subscriptions.state()
    .map((s) => s.filter);
  t.deepEqual([...subscribed].sort(), [...filters].sort());
  t.deepEqual(
    inbound.filter((topic) => !subscribed.includes(topic)),
    [],
    'every → device topic is subscribed',
  );
});

test('subscriptions: each filter at the QoS the subscriptions table gives it', async (t) => {
  const { services } = await composedAgent();
  const documented = Object.fromEntries(
    table(protocolDoc, 'filter').map(([filter, qos]) => [concrete(codes(filter!)[0]!, '+'), Number(qos)]),
  );
  const subscribed = Object.fromEntries(
    services
      .fleet()
      .agent!.subscriptions.state()
      .map((s) => [s.filter, s.qos]),
  );
  t.deepEqual(subscribed, documented);
  t.deepEqual(
    Object.keys(subscribed).filter((f) => subscribed[f] === 1),
    [deviceTopics(DEVICE).commandFilter],
    'only the device’s own commands at QoS 1',
  );
});

test('topics: the device publishes on exactly the documented outbound topics', (t) => {
  const documented = table(protocolDoc, 'topic')
    .filter(([, direction]) => direction!.startsWith('device →'))
    .map(([topic]) => concrete(codes(topic!)[0]!, 'ping'));
  const d = deviceTopics(DEVICE);
  const published = [
    d.status,
    ...DOCUMENT_KINDS.map((k) => d.document(k)),
    d.telemetry,
    d.events,
    d.responses,
    otaTopics.deviceStatus(DEVICE),
    haDiscoveryTopic(DEVICE),
  ];
  t.deepEqual([...published].sort(), [...documented].sort());
});

/** `{a, b?}` → [[a, required], [b, optional]]; `—` → []. */
function documentedParams(cell: string): [string, boolean][] {
  const spans = codes(cell);
  const first = spans[0];
  if (first === undefined || !first.startsWith('{')) return [];
  return first
    .slice(1, -1)
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean)
    .map((k) => [k.replace(/\?$/, ''), !k.endsWith('?')]);
}

test('commands: every registered command is documented with exactly its params, and nothing else is', async (t) => {
  const { services } = await composedAgent();
  const rows = table(protocolDoc, 'command');
  const registry = services.commands;
  t.deepEqual(
    rows.map(([name]) => codes(name!)[0]).sort(),
    registry.list().map((c) => c.name),
    'the documented commands are the registered ones',
  );
  for (const [nameCell, paramsCell] of rows) {
    const name = codes(nameCell!)[0]!;
    const schema = registry.params(name);
    if (!schema) continue;
    const required = new Set(schema.required ?? []);
    const inCode = Object.keys(schema.properties ?? {}).map((k): [string, boolean] => [k, required.has(k)]);
    t.deepEqual(documentedParams(paramsCell!), inCode, `params of ${name}`);
  }
});

test('error codes: the table lists exactly the codes a response can carry', (t) => {
  const documented = table(protocolDoc, 'code').map(([code]) => codes(code!)[0]);
  t.deepEqual([...documented].sort(), [...ERROR_CODES].sort());
});

/** A documented metric name as a pattern: `<N>` digits, `<slot>` a slot name, other placeholders a word. */
test('metrics: every metric the code produces has a documented name, and every documented name is produced', async (t) => {
  const documented = table(protocolDoc, 'metric').flatMap(([cell]) => codes(cell!));
  const patterns = documented.map((name) => ({ name, re: metricPattern(name) }));
  // What the samplers, the runtime's slot gauges and the voice workload produce.
  const root = mkdtempSync(join(tmpdir(), 'mnn-edge-metrics-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'proc', 'net'), { recursive: true });
  const netDev = (n: number) =>
    `Inter-| Receive | Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n  eth0: ${n} 1 0 0 0 0 0 0 ${n} 1 0 0 0 0 0 0\n`;
  let now = 0;
  const net = networkSampler(root, () => now);
  writeFileSync(join(root, 'proc', 'net', 'dev'), netDev(1000));
  await net.sample();
  now = 1000;
  writeFileSync(join(root, 'proc', 'net', 'dev'), netDev(5000));
  const cpu = cpuSampler();
  await cpu.sample();
  // agent.timers_all comes only with the census (the soak's); the real agent with it on is wire-names.test.ts.
  startTimerCensus();
  const produced = new Set<string>([
    ...Object.keys(await cpu.sample()),
    ...Object.keys(await memorySampler().sample()),
    ...Object.keys(await thermalSampler(join(socFixturesDir, 'qcom-qcs9075-iq9075-evk')).sample()),
    ...Object.keys(await net.sample()),
    ...Object.keys(await diskSampler(root).sample()),
    ...Object.keys(await processSampler().sample()),
    ...Object.keys(
      slotGauges([
        {
          slot: 'voice.llm',
          requests: 1,
          errors: 0,
          tokensPerSec: 20,
          ttftMs: 300,
          hostRssBytes: 1e8,
          kv: {
            hits: 1,
            partials: 0,
            misses: 1,
            reusedTokens: 30,
            prefilledTokens: 10,
            last: {
              outcome: 'hit',
              reason: null,
              reusedTokens: 30,
              prefilledTokens: 5,
              newHost: false,
              snapshotBytes: 4096,
            },
          },
        },
      ]),
    ),
    ...Object.keys(new VoiceTurnStore(openStore(':memory:'), { maxTurns: 10, maxAgeHours: 1 }).metrics()),
  ]);
  for (const metric of produced)
    t.true(
      patterns.some((p) => p.re.test(metric)),
      `${metric} is produced but matches no documented name`,
    );
  for (const p of patterns)
    t.true(
      [...produced].some((m) => p.re.test(m)),
      `${p.name} is documented but nothing produces it`,
    );
});

test('Home Assistant: the documented entities are the announced ones, and the backend select sends what set-placement accepts', async (t) => {
  const { services } = await composedAgent();
  const slot = 'voice.llm';
  const config = buildHaDiscovery({
    deviceId: DEVICE,
    agentVersion: '0.0.0-doc',
    temperatureMetrics: ['temp.soc_c'],
    slots: [{ name: slot, backends: ['cpu', 'opencl'] }],
    modelSlots: [{ slot, options: ['none', 'tiny-llm'] }],
  });
  const announced = Object.values(config.cmps)
    .map((c) => `${c['name']} (${c.p})`)
    .sort();
  const documented = table(protocolDoc, 'entity')
    .map(
      ([entity, platform]) =>
        `${codes(entity!)[0]!.replace('<zone>', 'soc').replace('<slot>', slot)} (${platform})`,
    )
    .sort();
  t.deepEqual(announced, documented);
  t.is(haDiscoveryTopic(DEVICE), `homeassistant/device/${deviceTopics(DEVICE).segment}/config`);
  const select = Object.values(config.cmps).find(
    (c) => c.p === 'select' && c['name'] === `${slot} backend pin`,
  )!;
  t.deepEqual(select['options'], ['auto', 'cpu', 'opencl']);
  const template = String(select['command_template']);
  const render = (value: string) =>
    JSON.parse(
      template
        .replace(
          /\{% if value == 'auto' %\}(.*)\{% else %\}(.*)\{% endif %\}/,
          value === 'auto' ? '$1' : '$2',
        )
        .replace('{{ value }}', value),
    ) as { params: unknown };
  const paramsSchema = services.commands.params('set-placement')!;
  for (const value of select['options'] as string[])
    t.deepEqual(validate(paramsSchema, render(value).params), [], `the select's "${value}"`);
});

test('CONFIG.md: the mqtt table lists every key of the mqtt section and no other', (t) => {
  const section = configDoc.slice(configDoc.indexOf('## `mqtt`'));
  const documented = table(section, 'key').flatMap(([cell]) => codes(cell!));
  t.deepEqual([...documented].sort(), Object.keys(mqttSchema.properties ?? {}).sort());
});

test('the agent started without its broker and reports it unreachable, retrying', async (t) => {
  const { services } = await composedAgent();
  const fleet = services.fleet().agent!;
  t.false(fleet.connected);
  t.like(fleet.linkStatus(), { url: 'mqtt://127.0.0.1:1' });
  t.true(
    await new Promise<boolean>((resolve) => {
      const check = () => {
        const s = fleet.linkStatus();
        if (s?.state === 'waiting' && s.lastError) resolve(/ECONNREFUSED/.test(s.lastError));
        else setTimeout(check, 50);
      };
      check();
    }),
  );
});
