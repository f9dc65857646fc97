import { randomUUID } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import { connect, type IClientPublishOptions, type MqttClient } from 'mqtt';
import type { MqttConfig } from '../../agent/config/sections/mqtt.js';
import { createFleetAgent, type FleetAgent } from '../../agent/fleet/agent.js';
import { buildClientOptions } from '../../agent/fleet/client-options.js';
import { type EmbeddedBroker, startEmbeddedBroker } from '../../agent/fleet/embedded-broker.js';
import { haDiscoveryTopic } from '../../agent/fleet/ha-discovery.js';
import {
  type CommandResponse,
  commandResponseSchema,
  documentSchema,
  encode,
  eventSchema,
  statusSchema,
  type TelemetryMessage,
  telemetrySchema,
} from '../../agent/fleet/protocol.js';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { openStore } from '../../agent/store/database.js';
import type { Sampler } from '../../agent/telemetry/samplers.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { validate } from '../../lib/schema.js';
import { deviceTopics } from '../../lib/topics.js';
import { type Mosquitto, mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

// The protocol contract, run against a real mosquitto (MQTT 5) and against the embedded aedes (MQTT 3.1.1):
// the same assertions must hold over both, with MQTT 5 properties in one case and payload fields in the other.

interface BrokerUnderTest {
  name: string;
  protocolVersion: 4 | 5;
  url: string;
  close(): Promise<void>;
}

const brokers: { name: string; protocolVersion: 4 | 5; start(): Promise<BrokerUnderTest> }[] = [
  {
    name: 'mosquitto (MQTT 5)',
    protocolVersion: 5,
    async start() {
      const m: Mosquitto = await startMosquitto();
      return { name: this.name, protocolVersion: 5, url: m.url, close: () => m.close() };
    },
  },
  {
    name: 'embedded aedes (MQTT 3.1.1)',
    protocolVersion: 4,
    async start() {
      const b: EmbeddedBroker = await startEmbeddedBroker({
        host: '127.0.0.1',
        port: 0,
        logger: createMemoryLogger(),
      });
      return { name: this.name, protocolVersion: 4, url: b.url, close: () => b.close() };
    },
  },
];

const fakeSampler: Sampler = {
  name: 'fake',
  async sample() {
    return { 'cpu.load_pct': 12.5, 'mem.used_pct': 40, 'temp.cpu_c': 55 };
  },
};

function mqttConfig(url: string, protocolVersion: 4 | 5): MqttConfig {
  return {
    url,
    protocolVersion,
    embeddedBroker: { enabled: false, port: 0, host: '127.0.0.1' },
    reconnect: { minMs: 50, maxMs: 200 },
    maxCommandBytes: 4096,
  };
}

function startAgent(broker: BrokerUnderTest, deviceId: string, tags: string[], family: string): FleetAgent {
  const agent = createFleetAgent({
    config: {
      mqtt: mqttConfig(broker.url, broker.protocolVersion),
      telemetry: {
        sampleIntervalMs: 50,
        publishIntervalMs: 200,
        outbox: {
          maxMessages: 1000,
          maxBytes: 1024 * 1024,
          messageExpirySec: 60,
          flushIntervalMs: 20,
          drainRatePerSec: 0,
          maxInflight: 16,
        },
      },
      root: '/nonexistent',
      dataDir: '/tmp',
    },
    db: openStore(':memory:'),
    logger: createMemoryLogger(),
    deviceId,
    tags,
    board: () => ({ family, model: `${family} dev kit` }),
    clock: systemClock,
    agentVersion: '0.1.0-test',
    samplers: [fakeSampler],
    haSlots: () => [{ name: 'chat', backends: ['cpu', 'opencl'] }],
  });
  return agent;
}

async function connected(agent: FleetAgent): Promise<void> {
  if (agent.connected) return;
  await new Promise<void>((resolve) => agent.events.once('connected', () => resolve()));
}

async function rawClient(broker: BrokerUnderTest): Promise<MqttClient> {
  const c = connect(broker.url, {
    protocolVersion: broker.protocolVersion,
    clientId: `raw-${randomUUID().slice(0, 8)}`,
    reconnectPeriod: 0,
  });
  await new Promise<void>((resolve, reject) => {
    c.once('connect', () => resolve());
    c.once('error', reject);
  });
  return c;
}

interface Received {
  topic: string;
  payload: Buffer;
  /** Set only on the copy a broker sends because of a new subscription. */
  retain: boolean;
  /** MQTT 5 message expiry interval, seconds. */
  expiry?: number;
}

/** Collects messages on `filter` until `until` says enough (or the timeout passes). */
async function collect(
  client: MqttClient,
  filter: string,
  until: (msgs: Received[]) => boolean,
  timeoutMs = 5_000,
  trigger?: () => Promise<void> | void,
): Promise<Received[]> {
  const msgs: Received[] = [];
  let onMessage: (
    topic: string,
    payload: Buffer,
    packet: { retain: boolean; properties?: { messageExpiryInterval?: number } },
  ) => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    onMessage = (topic, payload, packet) => {
      const expiry = packet.properties?.messageExpiryInterval;
      msgs.push({ topic, payload, retain: packet.retain, ...(expiry !== undefined ? { expiry } : {}) });
      if (until(msgs)) {
        clearTimeout(timer);
        resolve();
      }
    };
  });
  client.on('message', onMessage);
  await client.subscribeAsync(filter, { qos: 1 });
  await trigger?.();
  await done;
  client.off('message', onMessage);
  await client.unsubscribeAsync(filter);
  return msgs;
}

/** Sends a raw command payload and waits for the response on the device's default or given topic. */
async function rawCommand(
  client: MqttClient,
  deviceId: string,
  name: string,
  payload: Buffer | string,
  opts: IClientPublishOptions = { qos: 1 },
  responseTopic = deviceTopics(deviceId).responses,
): Promise<CommandResponse> {
  const msgs = await collect(
    client,
    responseTopic,
    (m) => m.length >= 1,
    5_000,
    async () => {
      await client.publishAsync(deviceTopics(deviceId).command(name), payload, opts);
    },
  );
  if (msgs.length === 0) throw new Error(`no response to ${name}`);
  return JSON.parse(msgs[0]!.payload.toString()) as CommandResponse;
}

for (const spec of brokers) {
  const serial = test.serial;
  const title = (s: string) => `${spec.name}: ${s}`;
  let broker: BrokerUnderTest;
  let agentA: FleetAgent;
  let agentB: FleetAgent;
  let operator: FleetOperator;
  let raw: MqttClient;
  const idA = `dev-a-${spec.protocolVersion}`;
  const idB = `dev-b-${spec.protocolVersion}`;

  const setup = async (t: ExecutionContext) => {
    if (spec.protocolVersion === 5 && !mosquittoAvailable()) {
      t.fail('mosquitto is not installed (scripts/install-test-deps.sh)');
      return false;
    }
    return true;
  };

  serial.before(async () => {
    if (spec.protocolVersion === 5 && !mosquittoAvailable()) return;
    broker = await spec.start();
    agentA = startAgent(broker, idA, ['lab', 'voice'], 'qcs6490');
    agentB = startAgent(broker, idB, ['lab'], 'rk3588');
    await Promise.all([agentA.start(), agentB.start()]);
    await Promise.all([connected(agentA), connected(agentB)]);
    operator = await FleetOperator.connect({ url: broker.url, protocolVersion: spec.protocolVersion });
    raw = await rawClient(broker);
  });

  serial.after.always(async () => {
    await raw?.endAsync();
    await operator?.close();
    await agentA?.stop();
    await agentB?.stop();
    await broker?.close();
  });

  serial(title('retained status is online, valid, and names board and tags'), async (t) => {
    if (!(await setup(t))) return;
    const msgs = await collect(raw, deviceTopics(idA).status, (m) => m.length >= 1);
    const status = JSON.parse(msgs[0]!.payload.toString());
    t.deepEqual(validate(statusSchema, status), []);
    t.is(status.state, 'online');
    t.deepEqual(status.board, { family: 'qcs6490', model: 'qcs6490 dev kit' });
    t.deepEqual(status.tags, ['lab', 'voice']);
    t.is(status.mqtt, spec.protocolVersion);
  });

  serial(title('Last Will marks a device offline when its connection dies'), async (t) => {
    if (!(await setup(t))) return;
    const id = `lwt-${spec.protocolVersion}`;
    const topics = deviceTopics(id);
    const will = {
      topic: topics.status,
      payload: encode('status', { v: 1, state: 'offline', deviceId: id }),
    };
    const victim = connect(
      broker.url,
      buildClientOptions(
        mqttConfig(broker.url, spec.protocolVersion),
        { url: broker.url, protocolVersion: spec.protocolVersion },
        id,
        will,
      ),
    );
    await new Promise<void>((resolve) => victim.once('connect', () => resolve()));
    const msgs = await collect(
      raw,
      topics.status,
      (m) => m.some((x) => JSON.parse(x.payload.toString()).state === 'offline'),
      5_000,
      () => {
        victim.stream.destroy(); // no DISCONNECT: the broker must publish the will
      },
    );
    victim.end(true);
    t.true(msgs.some((m) => JSON.parse(m.payload.toString()).state === 'offline'));
  });

  serial(title('ping answers with the correlation id, via the operator client'), async (t) => {
    if (!(await setup(t))) return;
    const [r] = await operator.command({ deviceId: idA }, 'ping', { echo: 'hi' });
    t.deepEqual(validate(commandResponseSchema, r), []);
    t.true(r!.ok);
    t.is(r!.deviceId, idA);
    t.like(r!.result as object, { pong: true, echo: 'hi', agentVersion: '0.1.0-test' });
  });

  serial(title('payload response topic and id work on both protocol levels'), async (t) => {
    if (!(await setup(t))) return;
    const rt = `${deviceTopics(idA).responses}/raw-1`;
    const r = await rawCommand(
      raw,
      idA,
      'ping',
      JSON.stringify({ id: 'abc', responseTopic: rt }),
      { qos: 1 },
      rt,
    );
    t.true(r.ok);
    t.is(r.id, 'abc');
  });

  if (spec.protocolVersion === 5) {
    serial(title('MQTT 5 response topic and correlation data properties are honoured'), async (t) => {
      if (!(await setup(t))) return;
      const rt = `${deviceTopics(idA).responses}/props`;
      const got = new Promise<{ payload: Buffer; correlation?: Buffer }>((resolve) => {
        raw.on('message', (topic, payload, packet) => {
          if (topic === rt)
            resolve({
              payload,
              ...(packet.properties?.correlationData
                ? { correlation: packet.properties.correlationData }
                : {}),
            });
        });
      });
      await raw.subscribeAsync(rt, { qos: 1 });
      await raw.publishAsync(deviceTopics(idA).command('ping'), '{}', {
        qos: 1,
        properties: { responseTopic: rt, correlationData: Buffer.from([1, 2, 3, 250]) },
      });
      const r = await got;
      t.deepEqual(r.correlation, Buffer.from([1, 2, 3, 250]));
      t.true(JSON.parse(r.payload.toString()).ok);
    });
  }

  serial(title('bad input gets a specific error response'), async (t) => {
    if (!(await setup(t))) return;
    const unknown = await rawCommand(raw, idA, 'fly', '{}');
    t.is(unknown.error?.code, 'EUNKNOWN');
    t.regex(unknown.error!.message, /^Unknown command "fly" \(known: .*get-state.*ping/);
    const badJson = await rawCommand(raw, idA, 'ping', '{"id": ');
    t.is(badJson.error?.code, 'EBADJSON');
    t.regex(badJson.error!.message, /^Payload is not valid JSON: /);
    const schema = await rawCommand(raw, idA, 'ping', JSON.stringify({ id: 'x1', bogus: 1 }));
    t.is(schema.error?.code, 'ESCHEMA');
    t.is(schema.id, 'x1');
    t.regex(schema.error!.message, /^Invalid command request: bogus: is not a known key/);
    const params = await rawCommand(raw, idA, 'logs', JSON.stringify({ params: { lines: 0 } }));
    t.is(params.error?.code, 'EPARAMS');
    t.is(params.error!.message, 'Invalid params for logs: lines: expected a number >= 1, got 0');
    const big = await rawCommand(raw, idA, 'ping', Buffer.alloc(5000, 0x20));
    t.is(big.error?.code, 'ETOOLARGE');
    t.is(big.error!.message, 'Payload of 5000 bytes exceeds the limit of 4096 bytes');
    const foreign = await rawCommand(raw, idA, 'ping', JSON.stringify({ responseTopic: 'elsewhere/x' }));
    t.is(foreign.error?.code, 'ERESPONSETOPIC');
  });

  serial(title('fleet commands reach only the selected devices'), async (t) => {
    if (!(await setup(t))) return;
    const voice = await operator.command({ selector: { tags: ['voice'] } }, 'ping', {}, 700);
    t.deepEqual(
      voice.map((r) => r.deviceId),
      [idA],
    );
    const lab = await operator.command({ selector: { tags: ['lab'] } }, 'ping', {}, 700);
    t.deepEqual(lab.map((r) => r.deviceId).sort(), [idA, idB].sort());
    const rk = await operator.command({ selector: { boardFamilies: ['rk3588'] } }, 'ping', {}, 700);
    t.deepEqual(
      rk.map((r) => r.deviceId),
      [idB],
    );
  });

  serial(title('retained documents are published and republished on change only'), async (t) => {
    if (!(await setup(t))) return;
    const topic = deviceTopics(idA).document('placement');
    agentA.setDocument('placement', { slots: { chat: { model: 'qwen' } } });
    const first = await collect(raw, topic, (m) => m.length >= 1);
    const doc = JSON.parse(first[0]!.payload.toString());
    t.deepEqual(validate(documentSchema, doc), []);
    t.deepEqual(doc.data, { slots: { chat: { model: 'qwen' } } });
    const later = await collect(
      raw,
      topic,
      (m) => m.length >= 2,
      1_000,
      () => {
        agentA.setDocument('placement', { slots: { chat: { model: 'qwen' } } }); // unchanged: not sent
        agentA.setDocument('placement', { slots: { chat: { model: 'llama' } } });
      },
    );
    const datas = later.map((m) => JSON.parse(m.payload.toString()).data.slots.chat.model);
    t.deepEqual(datas, ['qwen', 'llama']); // the retained copy, then the change
  });

  serial(
    title('events are published valid at QoS 1; get-state reports the outbox and documents'),
    async (t) => {
      if (!(await setup(t))) return;
      const events = await collect(
        raw,
        deviceTopics(idA).events,
        (m) => m.length >= 1,
        3_000,
        () => agentA.publishEvent('model.loaded', { slot: 'chat', model: 'qwen' }),
      );
      const e = JSON.parse(events[0]!.payload.toString());
      t.deepEqual(validate(eventSchema, e), []);
      t.like(e, { deviceId: idA, type: 'model.loaded', data: { slot: 'chat', model: 'qwen' } });
      const [state] = await operator.command({ deviceId: idA }, 'get-state');
      t.true(state?.ok);
      t.like(state?.result as object, { deviceId: idA, status: 'online', tags: ['lab', 'voice'] });
      const outbox = (state!.result as { outbox: { dropped: object } }).outbox;
      t.deepEqual(outbox.dropped, { expired: 0, overflow: 0, diskFull: 0 });
    },
  );

  serial(title('telemetry arrives valid, aggregated, with consecutive sequence numbers'), async (t) => {
    if (!(await setup(t))) return;
    const msgs = await collect(
      raw,
      deviceTopics(idA).telemetry,
      (m) => m.filter((x) => !x.retain).length >= 3,
    );
    t.true(msgs[0]!.retain, 'a new subscriber gets the latest telemetry at once');
    const live = msgs.filter((m) => !m.retain);
    t.true(live.length >= 3);
    const tel = live.map((m) => JSON.parse(m.payload.toString()) as TelemetryMessage);
    for (const m of tel) t.deepEqual(validate(telemetrySchema, m), []);
    t.like(tel[0]!.metrics['cpu.load_pct'], { min: 12.5, mean: 12.5, max: 12.5 });
    for (let i = 1; i < tel.length; i++) t.is(tel[i]!.seq, tel[i - 1]!.seq + 1);
    // Expiry: the payload field for everyone, the MQTT 5 property (remaining seconds) where there is one.
    for (const m of tel) t.is(m.expiresAt - m.ts, 60_000);
    if (spec.protocolVersion === 5)
      for (const m of live) t.true(m.expiry! > 0 && m.expiry! <= 60, `expiry ${m.expiry}`);
    else for (const m of live) t.is(m.expiry, undefined);
  });

  serial(title('Home Assistant discovery is announced and re-announced on HA birth'), async (t) => {
    if (!(await setup(t))) return;
    const topic = haDiscoveryTopic(idA);
    const tempSensor = `mnn_edge_${idA}_temp_cpu`;
    const hasTemp = (m: Received) => tempSensor in JSON.parse(m.payload.toString()).cmps;
    // Thermal zones are known after the first telemetry interval; discovery is refreshed then.
    const retained = await collect(raw, topic, (m) => m.some(hasTemp));
    const cfg = JSON.parse(retained.find(hasTemp)!.payload.toString());
    t.is(cfg.o.name, 'mnn-edge');
    t.truthy(cfg.cmps[`mnn_edge_${idA}_cpu_load`]);
    t.is(cfg.cmps[tempSensor].device_class, 'temperature');
    const again = await collect(
      raw,
      topic,
      (m) => m.length >= 2,
      3_000,
      async () => {
        await raw.publishAsync('homeassistant/status', 'online', { qos: 1 });
      },
    );
    t.true(again.length >= 2);
  });

  serial(title('1,000 malformed command payloads: each answered with an error, agent alive'), async (t) => {
    if (!(await setup(t))) return;
    const payloads = malformedPayloads(1000);
    const rt = deviceTopics(idB).responses;
    const responses: CommandResponse[] = [];
    const done = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 20_000);
      raw.on('message', (topic, payload) => {
        if (topic !== rt) return;
        responses.push(JSON.parse(payload.toString()) as CommandResponse);
        if (responses.length >= payloads.length) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    await raw.subscribeAsync(rt, { qos: 1 });
    for (const p of payloads) raw.publish(deviceTopics(idB).command(p.name), p.payload, { qos: 1 });
    await done;
    t.is(responses.length, payloads.length);
    t.true(responses.every((r) => r.ok === false && validate(commandResponseSchema, r).length === 0));
    const codes = new Set(responses.map((r) => r.error!.code));
    t.true(['EBADJSON', 'ESCHEMA', 'EPARAMS', 'EUNKNOWN', 'ETOOLARGE'].every((c) => codes.has(c as never)));
    const [pong] = await operator.command({ deviceId: idB }, 'ping');
    t.true(pong!.ok);
  });
}

/** Deterministic malformed inputs: broken JSON, wrong shapes, wrong params, unknown names, oversize. */
function malformedPayloads(n: number): { name: string; payload: Buffer }[] {
  let seed = 42;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const junk = () =>
    Buffer.from(Array.from({ length: 1 + Math.floor(rnd() * 64) }, () => Math.floor(rnd() * 256)));
  const makers: (() => { name: string; payload: Buffer })[] = [
    () => ({ name: 'ping', payload: junk() }),
    () => ({ name: 'ping', payload: Buffer.from(`{"id": ${'['.repeat(1 + Math.floor(rnd() * 50))}`) }),
    () => ({ name: 'ping', payload: Buffer.from(pick(['[]', '42', '"x"', 'null', 'true', '[{}]'])) }),
    () => ({
      name: 'ping',
      payload: Buffer.from(JSON.stringify({ params: pick([1, 'x', [], null, true]) })),
    }),
    () => ({ name: 'ping', payload: Buffer.from(JSON.stringify({ params: { echo: 7 } })) }),
    () => ({ name: 'ping', payload: Buffer.from(JSON.stringify({ params: { extra: rnd() } })) }),
    () => ({
      name: 'logs',
      payload: Buffer.from(JSON.stringify({ params: { lines: pick([-1, 0, 1e9, 1.5, 'ten']) } })),
    }),
    () => ({
      name: 'logs',
      payload: Buffer.from(JSON.stringify({ params: { level: pick(['loud', 1, null]) } })),
    }),
    () => ({ name: pick(['fly', 'reboot-now', 'x', 'get-stat']), payload: Buffer.from('{}') }),
    () => ({ name: 'ping', payload: Buffer.from(JSON.stringify({ v: pick([0, 2, '1', null]) })) }),
    () => ({ name: 'ping', payload: Buffer.from(JSON.stringify({ id: pick([1, '', null, {}]) })) }),
    () => ({ name: 'ping', payload: Buffer.from(JSON.stringify({ selector: { tags: ['x'] } })) }),
    () => ({ name: 'ping', payload: Buffer.from(JSON.stringify({ expiresAt: pick([-5, 'soon', 1.5]) })) }),
    () => ({ name: 'ping', payload: Buffer.alloc(4097 + Math.floor(rnd() * 2000), 0x7b) }),
    () => ({ name: 'ping', payload: Buffer.from(JSON.stringify({ expiresAt: 1 })) }),
  ];
  return Array.from({ length: n }, (_, i) => makers[i % makers.length]!());
}
