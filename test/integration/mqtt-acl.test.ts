import { join } from 'node:path';
import test from 'ava';
import { connect, type MqttClient } from 'mqtt';
import { createFleetAgent, type FleetAgent } from '../../agent/fleet/agent.js';
import { haDiscoveryTopic } from '../../agent/fleet/ha-discovery.js';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { deviceTopics, topicSegment } from '../../lib/topics.js';
import { type Mosquitto, mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';
import { repoRoot } from '../helpers/paths.js';

// The shipped docs/mosquitto-acl.example, loaded into a real mosquitto: the contract works under it, and a
// device can neither publish under another device's root nor read another device's commands.

let broker: Mosquitto;
let agent: FleetAgent;
let operator: FleetOperator;

function client(username: string): Promise<MqttClient> {
  const c = connect(broker.url, {
    protocolVersion: 5,
    username,
    clientId: `${username}-raw`,
    reconnectPeriod: 0,
  });
  return new Promise((resolve, reject) => {
    c.once('connect', () => resolve(c));
    c.once('error', reject);
  });
}

test.before(async () => {
  if (!mosquittoAvailable()) return;
  broker = await startMosquitto({
    extraConfig: [`acl_file ${join(repoRoot, 'docs', 'mosquitto-acl.example')}`],
  });
  agent = createFleetAgent({
    config: {
      mqtt: {
        url: broker.url,
        username: 'acl-dev',
        protocolVersion: 5,
        embeddedBroker: { enabled: false, port: 0, host: '127.0.0.1' },
      },
      telemetry: { enabled: false },
      root: '/nonexistent',
      dataDir: '/tmp',
    },
    db: openStore(':memory:'),
    logger: createMemoryLogger(),
    deviceId: 'acl-dev',
    tags: ['lab'],
    board: () => undefined,
    clock: systemClock,
    agentVersion: 'test',
  });
  await agent.start();
  if (!agent.connected) await new Promise<void>((resolve) => agent.events.once('connected', () => resolve()));
  operator = await FleetOperator.connect({ url: broker.url, username: 'operator' });
});

test.after.always(async () => {
  await operator?.close();
  await agent?.stop();
  await broker?.close();
});

test.serial('under the ACL, operators see devices and command them, one by one and fleet-wide', async (t) => {
  if (!mosquittoAvailable()) return t.fail('mosquitto is not installed (scripts/install-test-deps.sh)');
  const devices = await operator.listDevices(300);
  t.deepEqual(
    devices.map((d) => [d.deviceId, d.status?.state]),
    [['acl-dev', 'online']],
  );
  const [pong] = await operator.command({ deviceId: 'acl-dev' }, 'ping');
  t.true(pong?.ok);
  const fleet = await operator.command({ selector: { tags: ['lab'] } }, 'ping', {}, 500);
  t.deepEqual(
    fleet.map((r) => r.deviceId),
    ['acl-dev'],
  );
});

test.serial('a device cannot publish under another device root nor read its commands', async (t) => {
  if (!mosquittoAvailable()) return t.fail('mosquitto is not installed (scripts/install-test-deps.sh)');
  const evil = await client('evil-dev');
  const watcher = await client('operator');
  const seen: string[] = [];
  watcher.on('message', (topic) => seen.push(topic));
  await watcher.subscribeAsync('mnn-edge/acl-dev/events', { qos: 1 });
  const evilGot: string[] = [];
  evil.on('message', (topic) => evilGot.push(topic));
  await evil.subscribeAsync(deviceTopics('acl-dev').commandFilter, { qos: 1 });
  // MQTT 5: the broker refuses the publish (PUBACK reason "not authorized") and forwards nothing.
  const err = await evil
    .publishAsync('mnn-edge/acl-dev/events', '{"v":1,"deviceId":"acl-dev","ts":1,"type":"spoofed"}', {
      qos: 1,
    })
    .then(
      () => undefined,
      (e: Error) => e,
    );
  await operator.command({ deviceId: 'acl-dev' }, 'ping');
  await new Promise((r) => setTimeout(r, 200));
  t.deepEqual(seen, []);
  t.deepEqual(evilGot, [], "another device's commands are not delivered to it");
  t.log(err ? `publish refused: ${err.message}` : 'publish silently dropped');
  await evil.endAsync(true);
  await watcher.endAsync(true);
});

test.serial(
  'device ids with ".", ":", "-" and "_" work under the ACL: their topic segment is their username everywhere',
  async (t) => {
    if (!mosquittoAvailable()) return t.fail('mosquitto is not installed (scripts/install-test-deps.sh)');
    const ids = ['edge-7.lab', 'rk3588:01', 'node-3_b', 'x_2Ey'];
    const ha = await client('homeassistant');
    const discovered = new Set<string>();
    ha.on('message', (topic, payload) => {
      if (payload.length > 0) discovered.add(topic);
    });
    await ha.subscribeAsync('homeassistant/device/+/config', { qos: 1 });
    const agents: FleetAgent[] = [];
    try {
      for (const id of ids) {
        const a = createFleetAgent({
          config: {
            mqtt: {
              url: broker.url,
              username: topicSegment(id),
              protocolVersion: 'auto',
              embeddedBroker: { enabled: false, port: 0, host: '127.0.0.1' },
            },
            telemetry: { enabled: false },
            root: '/nonexistent',
            dataDir: '/tmp',
          },
          db: openStore(':memory:'),
          logger: createMemoryLogger(),
          deviceId: id,
          tags: ['lab'],
          board: () => undefined,
          clock: systemClock,
          agentVersion: 'test',
        });
        agents.push(a);
        await a.start();
        if (!a.connected) await new Promise<void>((resolve) => a.events.once('connected', () => resolve()));
        t.deepEqual(
          a.subscriptions.state().filter((s) => s.state !== 'active'),
          [],
          `${id}: every subscription granted`,
        );
      }
      const online = (await operator.listDevices(500)).filter((d) => d.status?.state === 'online');
      for (const id of ids) {
        t.true(
          online.some((d) => d.deviceId === id),
          `${id} is listed online`,
        );
        const [pong] = await operator.command({ deviceId: id }, 'ping');
        t.true(pong?.ok, `${id} answers`);
        t.is(pong?.deviceId, id);
      }
      const fleet = await operator.command({ selector: { deviceIds: ids } }, 'ping', {}, 1_000);
      t.deepEqual(fleet.map((r) => r.deviceId).sort(), [...ids].sort());
      // Home Assistant discovery is published under the same segment, so the broker accepted every one.
      const deadline = Date.now() + 3_000;
      while (!ids.every((id) => discovered.has(haDiscoveryTopic(id))) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      for (const id of ids) t.true(discovered.has(haDiscoveryTopic(id)), `${id}: discovery accepted`);
    } finally {
      for (const a of agents) await a.stop();
      await ha.endAsync(true);
    }
  },
);
