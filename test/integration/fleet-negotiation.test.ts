import test from 'ava';
import { connect } from 'mqtt';
import type { MqttConfig } from '../../agent/config/sections/mqtt.js';
import { createFleetAgent, type FleetAgent } from '../../agent/fleet/agent.js';
import { startEmbeddedBroker } from '../../agent/fleet/embedded-broker.js';
import type { StatusMessage } from '../../agent/fleet/protocol.js';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { deviceTopics } from '../../lib/topics.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

// `protocolVersion: "auto"` against brokers of both kinds: mosquitto 2 takes MQTT 5; aedes (3.1.1 only) refuses
// the MQTT 5 CONNECT with return code 1 and the agent comes back at once with 3.1.1. Either way the retained
// status says which level the device speaks, and commands work.

function agentOn(url: string, deviceId: string, mqtt: Partial<MqttConfig> = {}): FleetAgent {
  return createFleetAgent({
    config: {
      mqtt: {
        url,
        protocolVersion: 'auto',
        embeddedBroker: { enabled: false, port: 0, host: '127.0.0.1' },
        reconnect: { minMs: 100, maxMs: 400 },
        ...mqtt,
      },
      telemetry: { enabled: false },
      root: '/nonexistent',
      dataDir: '/tmp',
    },
    db: openStore(':memory:'),
    logger: createMemoryLogger(),
    deviceId,
    tags: [],
    board: () => undefined,
    clock: systemClock,
    agentVersion: 'test',
  });
}

async function connected(agent: FleetAgent): Promise<{ protocolVersion: 4 | 5 }> {
  return new Promise((resolve) => agent.events.once('connected', resolve));
}

async function retainedStatus(url: string, deviceId: string, protocolVersion: 4 | 5): Promise<StatusMessage> {
  const c = connect(url, { protocolVersion, reconnectPeriod: 0, clientId: `status-${deviceId}` });
  try {
    return await new Promise<StatusMessage>((resolve, reject) => {
      c.once('error', reject);
      c.on('message', (_t, payload) => resolve(JSON.parse(payload.toString()) as StatusMessage));
      c.once('connect', () => void c.subscribeAsync(deviceTopics(deviceId).status, { qos: 1 }));
    });
  } finally {
    await c.endAsync(true);
  }
}

test('auto against a 3.1.1-only broker (aedes): refused at 5, connected at 4, status says mqtt 4, commands work', async (t) => {
  const broker = await startEmbeddedBroker({ host: '127.0.0.1', port: 0, logger: createMemoryLogger() });
  t.teardown(() => broker.close());
  const agent = agentOn(broker.url, 'neg-311');
  t.teardown(() => agent.stop());
  const up = connected(agent);
  await agent.start();
  t.is((await up).protocolVersion, 4);
  t.like(agent.linkStatus(), { state: 'connected', protocolVersion: 4 });
  t.is((await retainedStatus(broker.url, 'neg-311', 4)).mqtt, 4);
  const operator = await FleetOperator.connect({ url: broker.url, protocolVersion: 4 });
  t.teardown(() => operator.close());
  const [pong] = await operator.command({ deviceId: 'neg-311' }, 'ping');
  t.true(pong?.ok);
});

test('auto against mosquitto 2: MQTT 5 at the first attempt', async (t) => {
  if (!mosquittoAvailable()) return t.fail('mosquitto is not installed (scripts/install-test-deps.sh)');
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const agent = agentOn(broker.url, 'neg-5');
  t.teardown(() => agent.stop());
  const up = connected(agent);
  await agent.start();
  t.is((await up).protocolVersion, 5);
  t.is((await retainedStatus(broker.url, 'neg-5', 5)).mqtt, 5);
});

test('a pinned level is not negotiated: protocolVersion 5 against aedes keeps failing and says why', async (t) => {
  const broker = await startEmbeddedBroker({ host: '127.0.0.1', port: 0, logger: createMemoryLogger() });
  t.teardown(() => broker.close());
  const agent = agentOn(broker.url, 'neg-pinned', { protocolVersion: 5 });
  t.teardown(() => agent.stop());
  await agent.start();
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const s = agent.linkStatus();
    if (s?.state === 'waiting' && s.failedAttempts >= 2) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const s = agent.linkStatus();
  t.false(agent.connected);
  t.like(s, { state: 'waiting' });
  t.regex(s?.state === 'waiting' ? (s.lastError ?? '') : '', /protocol version/i);
});
