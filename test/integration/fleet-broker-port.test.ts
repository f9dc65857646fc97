import test from 'ava';
import { connect } from 'mqtt';
import { createFleetAgent } from '../../agent/fleet/agent.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

const gate = mosquittoAvailable() ? test : test.skip;

// `npm start` on a developer's machine where Debian's mosquitto already holds the local broker port: the agent
// uses that broker instead of refusing to start.
gate('when the embedded broker port is taken, the agent uses the broker listening there', async (t) => {
  const mosquitto = await startMosquitto();
  t.teardown(() => mosquitto.close());
  const logger = createMemoryLogger();
  const agent = createFleetAgent({
    config: {
      mqtt: {
        protocolVersion: 5,
        embeddedBroker: { enabled: true, port: mosquitto.port, host: '127.0.0.1' },
      },
      root: '/nonexistent',
      dataDir: '/tmp',
    },
    db: openStore(':memory:'),
    logger,
    deviceId: 'port-clash',
    tags: [],
    board: () => ({ family: 'x86-64' }),
    clock: systemClock,
    agentVersion: '1.2.3',
    samplers: [],
  });
  t.teardown(() => agent.stop());
  await agent.start();
  if (!agent.connected) await new Promise<void>((resolve) => agent.events.once('connected', () => resolve()));
  t.is(agent.brokerUrl, `mqtt://127.0.0.1:${mosquitto.port}`);
  t.true(logger.lines.some((l) => l.includes('the embedded broker port is taken')));

  const client = connect(`mqtt://127.0.0.1:${mosquitto.port}`, { protocolVersion: 5 });
  t.teardown(() => client.end(true));
  const status = await new Promise<{ state: string }>((resolve) => {
    client.on('message', (_topic, payload) => resolve(JSON.parse(payload.toString()) as { state: string }));
    client.subscribe('mnn-edge/port-clash/status');
  });
  t.is(status.state, 'online');
});
