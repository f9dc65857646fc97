import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { connectAsync } from 'mqtt';
import { parseConfig } from '../../agent/config/load.js';
import { HttpRouter } from '../../agent/http/router.js';
import type { AgentEvents } from '../../agent/module.js';
import { KvStore, openStore } from '../../agent/store/database.js';
import { createTrustedTime } from '../../agent/time/trusted-time.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
import { ModelStore } from '../../models/index.js';
import type { JobStatus } from '../../ota/jobs/job.js';
import { clientTransport } from '../../ota/jobs/mqtt-device.js';
import { createOtaModule } from '../../ota/module.js';
import { packModel } from '../../ota/tools/pack.js';
import { connectOperator, publishJob, watchStatuses } from '../../ota/tools/publish.js';
import { servePackages } from '../../ota/tools/serve.js';
import { generateSigningKey, parsePrivateKey } from '../../ota/trust/keys.js';
import { signTargets } from '../../ota/trust/targets.js';
import { llmDemoMissing, llmDemoPath } from '../helpers/mnn-tools.js';
import { MOSQUITTO_BIN, startMosquitto } from '../helpers/mosquitto.js';
import { modelFixturesDir } from '../helpers/paths.js';

// The AgentModule as agent/main.ts would run it: configuration parsed by the agent's loader (the `ota`
// section's schema), the store's ports with llm_demo as the probe, jobs over a real broker, a stop and a
// restart that answers a re-sent job id with its recorded result.

const LLM_DEMO = llmDemoPath();
const skipped = llmDemoMissing(LLM_DEMO, { mosquittoBin: MOSQUITTO_BIN });
const gate = skipped === undefined ? test : test.skip;
if (skipped !== undefined) console.log(`ota-module: skipped, ${skipped}`);

gate('createOtaModule: config → job over MQTT → succeeded; restart keeps the result', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ota-module-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { artifact } = await packModel(join(modelFixturesDir, 'tiny-llm'), {
    id: 'tiny-llm',
    version: '1.0.0',
    outDir: dir,
  });
  const srv = await servePackages(dir);
  t.teardown(() => srv.close());
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const key = generateSigningKey();

  t.throws(() => parseConfig({ ota: { threshold: 0 } }, 'test'), {
    message: 'Invalid configuration in test: ota.threshold: expected a number >= 1, got 0',
  });
  const config = parseConfig(
    { dataDir: join(dir, 'data'), ota: { trustedKeys: [{ publicKey: key.publicKey }], llmDemo: LLM_DEMO } },
    'test',
  );
  const db = openStore(join(dir, 'data', 'agent.db'));
  t.teardown(() => void db.close());
  const kv = new KvStore(db);
  const ctx = {
    config,
    logger: createMemoryLogger(),
    db,
    kv,
    router: new HttpRouter(),
    events: new TypedEventEmitter<AgentEvents>(),
    identity: { deviceId: 'dev-m', tags: ['lab'], source: 'config' as const, evidence: { note: 'test' } },
    time: createTrustedTime({
      kv,
      clock: systemClock,
      probe: () => ({ synchronized: true, evidence: 'test' }),
    }),
    clock: systemClock,
  };
  const { store } = ModelStore.open({ dataDir: config.dataDir, db });
  const client = await connectAsync(broker.url, { protocolVersion: 5, clientId: 'dev-m' });
  t.teardown(() => client.endAsync());
  const operator = await connectOperator({ url: broker.url });
  t.teardown(() => operator.close());
  const finals: JobStatus[] = [];
  let onFinal: () => void = () => {};
  await watchStatuses(operator, (s) => {
    if (['succeeded', 'failed', 'rolled-back', 'rejected'].includes(s.state)) {
      finals.push(s);
      onFinal();
    }
  });
  const nextFinal = () => new Promise<void>((resolve) => (onFinal = resolve));

  const job = {
    jobId: 'm-1',
    package: { id: 'tiny-llm', version: '1.0.0' },
    targets: signTargets(
      {
        _type: 'mnn-edge/targets',
        specVersion: 1,
        version: 1,
        expires: new Date(Date.now() + 3_600_000).toISOString(),
        packages: [{ id: 'tiny-llm', version: '1.0.0', artifacts: [artifact] }],
      },
      [parsePrivateKey(key.privateKeyPem)],
    ),
    baseUrl: srv.baseUrl,
  };
  const mod = createOtaModule({ transport: () => clientTransport(client), store: () => store });
  await mod.start(ctx);
  let done = nextFinal();
  await publishJob(operator, { tag: 'lab' }, job);
  await done;
  await mod.stop?.();
  t.is(finals.at(-1)?.state, 'succeeded', finals.at(-1)?.message);
  t.true(store.get({ id: 'tiny-llm', version: '1.0.0' })!.inUse);

  // Restarted: the retained tag job comes back and is answered from the journal, not run again.
  const again = createOtaModule({ transport: () => clientTransport(client), store: () => store });
  done = nextFinal();
  await again.start(ctx);
  await done;
  await again.stop?.();
  t.is(finals.length, 2);
  t.is(finals[1]?.state, 'succeeded');
  t.is(finals[1]?.jobId, 'm-1');
});
