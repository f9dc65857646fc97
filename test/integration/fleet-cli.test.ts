import test from 'ava';
import { defaultConfig } from '../../agent/config/defaults.js';
import { createFleetAgent, type FleetAgent } from '../../agent/fleet/agent.js';
import { startEmbeddedBroker } from '../../agent/fleet/embedded-broker.js';
import { createFleetModule } from '../../agent/fleet/module.js';
import type { AgentContext } from '../../agent/module.js';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { runCli } from '../helpers/run-cli.js';

// With no broker configured the agent brings up the embedded one; the fleet CLI then lists, commands and
// watches it over the same contract an operator would use against mosquitto.

let agent: FleetAgent;
let url: string;

test.before(async () => {
  agent = createFleetAgent({
    config: {
      mqtt: { protocolVersion: 5, embeddedBroker: { enabled: true, port: 0, host: '127.0.0.1' } },
      telemetry: { sampleIntervalMs: 50, publishIntervalMs: 100, outbox: { flushIntervalMs: 20 } },
      root: '/nonexistent',
      dataDir: '/tmp',
    },
    db: openStore(':memory:'),
    logger: createMemoryLogger(),
    deviceId: 'cli-dev',
    tags: ['lab'],
    board: () => ({ family: 'rk3588', model: 'ROCK 5B' }),
    clock: systemClock,
    agentVersion: '1.2.3',
    samplers: [{ name: 'x', sample: async () => ({ 'cpu.load_pct': 33, 'temp.soc_c': 48.5 }) }],
    runtime: { slots: () => [{ slot: 'chat', model: 'qwen', tokensPerSec: 21, requests: 0, errors: 0 }] },
  });
  await agent.start();
  if (!agent.connected) await new Promise<void>((resolve) => agent.events.once('connected', () => resolve()));
  url = agent.brokerUrl!;
});

test.after.always(async () => {
  await agent?.stop();
});

test.serial('the embedded broker is used when no broker URL is configured', (t) => {
  t.regex(url, /^mqtt:\/\/127\.0\.0\.1:\d+$/);
  t.true(agent.connected);
});

test.serial('fleet ls lists devices from retained status', async (t) => {
  const r = await runCli('fleet', 'ls', '--url', url, '--mqtt-version', '4', '--wait', '400');
  t.is(r.code, 0, r.err);
  const [header, row] = r.out.trimEnd().split('\n');
  t.regex(header!, /^DEVICE\s+STATUS\s+BOARD\s+TAGS\s+MODELS\s+TELEMETRY AGE\s+AGENT$/);
  t.regex(row!, /^cli-dev\s+online\s+rk3588 \/ ROCK 5B\s+lab\s+chat=\S*\s+\S+\s+1\.2\.3$/);
});

test.serial('fleet cmd to one device prints the result; fleet-wide prints one line per device', async (t) => {
  const one = await runCli(
    'fleet',
    'cmd',
    'cli-dev',
    'ping',
    '{"echo":"hey"}',
    '--url',
    url,
    '--mqtt-version',
    '4',
  );
  t.is(one.code, 0, one.err);
  t.like(JSON.parse(one.out), { pong: true, echo: 'hey', agentVersion: '1.2.3' });
  const many = await runCli(
    'fleet',
    'cmd',
    '--tag',
    'lab',
    'ping',
    '--url',
    url,
    '--mqtt-version',
    '4',
    '--timeout',
    '500',
  );
  t.is(many.code, 0, many.err);
  t.regex(many.out, /^cli-dev: ok \{"pong":true/);
  const bad = await runCli('fleet', 'cmd', 'cli-dev', 'fly', '--url', url, '--mqtt-version', '4');
  t.is(bad.code, 1);
  t.regex(bad.out, /^cli-dev: error EUNKNOWN: Unknown command "fly"/);
});

test.serial('fleet watch prints a live telemetry table', async (t) => {
  const r = await runCli('fleet', 'watch', '--count', '2', '--url', url, '--mqtt-version', '4');
  t.is(r.code, 0, r.err);
  const tables = r.out.trim().split('\n\n');
  t.is(tables.length, 2);
  t.regex(tables[1]!, /DEVICE\s+SEQ\s+AGE\s+CPU%\s+MEM%\s+TEMP°C\s+TOKENS\/S\s+QUEUED\s+DROPPED/);
  t.regex(tables[1]!, /cli-dev\s+\d+\s+\S+\s+33\.0\s+-\s+48\.5\s+chat=21\.0\s+\d+\s+0/);
});

test.serial('usage errors exit with 2 and say what is wrong', async (t) => {
  const r1 = await runCli('fleet', 'dance');
  t.is(r1.code, 2);
  t.regex(r1.err, /^mnn-edge fleet: unknown subcommand 'dance' \(expected ls, cmd, watch or config\)/);
  const r2 = await runCli('fleet', 'cmd', 'cli-dev', 'ping', '[1]', '--url', url);
  t.is(r2.code, 2);
  t.regex(r2.err, /params must be a JSON object/);
  const r3 = await runCli('fleet', 'ls', '--url', 'http://x');
  t.is(r3.code, 2);
  t.regex(r3.err, /--url must start with mqtt:\/\/, mqtts:\/\/, ws:\/\/ or wss:\/\/, got "http:\/\/x"/);
  const r4 = await runCli('fleet', 'cmd', 'ping');
  t.is(r4.code, 2);
  t.regex(r4.err, /missing command name/);
});

test.serial('as an AgentModule: identity, store and config come from the agent context', async (t) => {
  const config = defaultConfig({ MNN_EDGE_DATA_DIR: '/tmp/mnn-edge-fleet-module' });
  config.mqtt = { protocolVersion: 5, embeddedBroker: { enabled: true, port: 0, host: '127.0.0.1' } };
  config['telemetry'] = { enabled: false };
  const module = createFleetModule({ agentVersion: '4.5.6', board: () => ({ family: 'qcs6490' }) });
  module.commands.register({
    name: 'detect',
    summary: 'registered by another module',
    handler: () => ({ found: 1 }),
  });
  // Only the fields the fleet module reads; the rest of the context belongs to other modules.
  const ctx = {
    config,
    db: openStore(':memory:'),
    logger: createMemoryLogger(),
    identity: { deviceId: 'module-dev', tags: ['edge'], source: 'config', evidence: { note: 'test' } },
    clock: systemClock,
  } as unknown as AgentContext;
  await module.start(ctx);
  try {
    const fleet = module.agent!;
    if (!fleet.connected)
      await new Promise<void>((resolve) => fleet.events.once('connected', () => resolve()));
    const op = await FleetOperator.connect({ url: fleet.brokerUrl!, protocolVersion: 4 });
    const [r] = await op.command({ deviceId: 'module-dev' }, 'detect');
    t.deepEqual(r?.result, { found: 1 });
    await op.close();
  } finally {
    await module.stop!();
  }
  t.is(module.agent, undefined);
});

test.serial('a busy port for the embedded broker is a clear error', async (t) => {
  const port = Number(new URL(url).port);
  await t.throwsAsync(startEmbeddedBroker({ host: '127.0.0.1', port, logger: createMemoryLogger() }), {
    message: `Cannot start the embedded MQTT broker on 127.0.0.1:${port}: listen EADDRINUSE: address already in use 127.0.0.1:${port} (set mqtt.embeddedBroker.port, or mqtt.url to use an external broker)`,
  });
});
