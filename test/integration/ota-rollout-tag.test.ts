import test from 'ava';
import { connect } from 'mqtt';
import { rolloutDevices } from '../../agent/cli/commands/ota.js';
import { parseArgs } from '../../agent/cli/common/args.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

const gate = mosquittoAvailable() ? test : test.skip;
const flags = { values: ['devices', 'tag'] };

// `ota rollout start --tag T` covers the devices whose retained status carries the tag, as announced on the
// broker when the rollout starts.
gate('rollout devices by tag come from the retained status; listed devices are taken as given', async (t) => {
  const mosquitto = await startMosquitto();
  t.teardown(() => mosquitto.close());
  const client = await connect(mosquitto.url, { protocolVersion: 5 });
  await new Promise<void>((resolve) => client.once('connect', () => resolve()));
  t.teardown(() => client.end(true));
  const announce = (deviceId: string, tags: string[]) =>
    client.publishAsync(
      `mnn-edge/${deviceId}/status`,
      JSON.stringify({ v: 1, state: 'online', deviceId, tags, board: { family: 'rk3588' } }),
      { qos: 1, retain: true },
    );
  await announce('lab-1', ['lab', 'rk']);
  await announce('lab-2', ['lab']);
  await announce('shop-1', ['shop']);

  t.deepEqual(await rolloutDevices(parseArgs(['--tag', 'lab'], flags), { url: mosquitto.url }), [
    'lab-1',
    'lab-2',
  ]);
  t.deepEqual(await rolloutDevices(parseArgs(['--devices', 'a, b,,c'], flags), { url: mosquitto.url }), [
    'a',
    'b',
    'c',
  ]);
  await t.throwsAsync(rolloutDevices(parseArgs(['--tag', 'nowhere'], flags), { url: mosquitto.url }), {
    message: `No device with tag nowhere has announced itself on ${mosquitto.url}`,
  });
  await t.throwsAsync(
    rolloutDevices(parseArgs(['--tag', 'lab', '--devices', 'a'], flags), { url: mosquitto.url }),
    {
      message: 'give exactly one of --devices and --tag',
    },
  );
});
