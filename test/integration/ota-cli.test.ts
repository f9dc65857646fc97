import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import test from 'ava';
import { connectAsync } from 'mqtt';
import { main } from '../../agent/cli/main.js';
import { KvStore, openStore } from '../../agent/store/database.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelStore } from '../../models/index.js';
import { otaDefaults } from '../../ota/config.js';
import { attachOtaToMqtt, clientTransport } from '../../ota/jobs/mqtt-device.js';
import { createOtaDevice, storePorts } from '../../ota/module.js';
import { llmDemoMissing, llmDemoPath } from '../helpers/mnn-tools.js';
import { MOSQUITTO_BIN, startMosquitto } from '../helpers/mosquitto.js';
import { modelFixturesDir } from '../helpers/paths.js';

// The operator's CLI against a real broker and a device: keygen, pack, sign, publish --serve --wait, status.

const LLM_DEMO = llmDemoPath();
const skipped = llmDemoMissing(LLM_DEMO, { mosquittoBin: MOSQUITTO_BIN });
const gate = skipped === undefined ? test : test.skip;
if (skipped !== undefined) console.log(`ota-cli: skipped, ${skipped}`);

async function cli(argv: string[]) {
  let out = '';
  let err = '';
  const stream = (add: (s: string) => void) =>
    new Writable({
      write(chunk, _enc, cb) {
        add(chunk.toString());
        cb();
      },
    });
  const code = await main(argv, {
    stdout: stream((s) => (out += s)),
    stderr: stream((s) => (err += s)),
    env: {},
  });
  return { code, out, err };
}

gate('ota publish --serve --wait delivers to a device; ota status shows it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ota-cli-e2e-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const pkgs = join(dir, 'pkgs');
  const targets = join(dir, 'targets.json');
  t.is((await cli(['ota', 'keygen', '--out', join(dir, 'keys'), '--name', 'fleet'])).code, 0);
  const packed = await cli([
    'ota',
    'pack',
    join(modelFixturesDir, 'tiny-llm'),
    '--id',
    'tiny-llm',
    '--version',
    '1.0.0',
    '--out',
    pkgs,
    '--targets',
    targets,
  ]);
  t.is(packed.code, 0, packed.err);
  t.is(
    (await cli(['ota', 'sign', targets, '--key', join(dir, 'keys', 'fleet.key'), '--expires', '1d'])).code,
    0,
  );

  const dataDir = join(dir, 'device');
  const db = openStore(join(dataDir, 'agent.db'));
  t.teardown(() => void db.close());
  const { store } = ModelStore.open({ dataDir, db });
  const config = {
    ...otaDefaults,
    trustedKeys: [{ publicKey: readFileSync(join(dir, 'keys', 'fleet.pub'), 'utf8').trim() }],
    llmDemo: LLM_DEMO,
  };
  const device = createOtaDevice({
    db,
    dataDir,
    config,
    facts: { deviceId: 'dev-c', tags: [], arch: process.arch },
    time: { trustedNow: () => Date.now(), clockStatus: () => ({ synchronized: true, evidence: 'test' }) },
    logger: createMemoryLogger(),
    ports: storePorts(store, new KvStore(db), config),
  });
  const client = await connectAsync(broker.url, { protocolVersion: 5, clientId: 'dev-c' });
  device.runner.start();
  const link = attachOtaToMqtt(
    clientTransport(client),
    device.runner,
    { deviceId: 'dev-c', tags: [] },
    createMemoryLogger(),
  );
  t.teardown(async () => {
    await link.detach();
    await device.runner.stop();
    await client.endAsync();
  });

  const pub = await cli([
    'ota',
    'publish',
    '--targets',
    targets,
    '--package',
    'tiny-llm@1.0.0',
    '--device',
    'dev-c',
    '--broker',
    broker.url,
    '--serve',
    pkgs,
    '--bind',
    '127.0.0.1',
    '--job-id',
    'cli-1',
    '--wait',
    '60',
  ]);
  t.is(pub.code, 0, pub.err);
  t.regex(pub.out, /^job cli-1 sent to device dev-c\n/);
  t.regex(pub.out, /dev-c {2}cli-1 {2}succeeded (\d+)\/\1: TTFT [\d.]+ ms, decode [\d.]+ tok\/s\n$/);

  const st = await cli(['ota', 'status', '--broker', broker.url, '--state', join(dir, 'none.db')]);
  t.is(st.code, 0, st.err);
  t.regex(st.out, /^dev-c {2}cli-1 {2}succeeded/);
});
