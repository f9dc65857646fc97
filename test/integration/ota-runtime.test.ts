import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { catalogFromStore } from '../../agent/plan/from-catalog.js';
import type { PlanBoard } from '../../agent/plan/types.js';
import { engineHostFactory } from '../../agent/runtime/engine/engine-host-adapter.js';
import { procSystemMemory } from '../../agent/runtime/engine/proc-memory.js';
import { runtimeActivationPort, runtimeHealthProbe } from '../../agent/runtime/ota-ports.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import { openStore } from '../../agent/store/database.js';
import { engineAvailability, runtimeInfo } from '../../engine/index.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelCatalog, ModelStore } from '../../models/index.js';
import { otaDefaults } from '../../ota/config.js';
import type { JobStatus } from '../../ota/jobs/job.js';
import { ModelStoreInstaller } from '../../ota/jobs/store-adapter.js';
import { createOtaDevice } from '../../ota/module.js';
import { packModel } from '../../ota/tools/pack.js';
import { servePackages } from '../../ota/tools/serve.js';
import { generateSigningKey, parsePrivateKey } from '../../ota/trust/keys.js';
import { signTargets, type TargetPackage } from '../../ota/trust/targets.js';
import { modelFixturesDir } from '../helpers/paths.js';

// With MNN and the engine addon present: OTA through the real runtime — the job hot-swaps the serving slot to
// the new version via the desired state's OTA source, the gate probes what actually serves, and a version the
// engine cannot load is rolled back to the one that served before.

const MiB = 1024 * 1024;
const engine = engineAvailability();
const gate = engine.available ? test : test.skip;
if (!engine.available) console.log(`ota-runtime: skipped, ${engine.reason}`);

const board: PlanBoard = {
  boardId: 'ota-runtime-test',
  ramBytes: totalmem(),
  cpuClusters: [],
  backends: [{ backend: 'cpu', available: true, reason: 'MNN CPU runtime' }],
  priors: [],
  threadAdvice: { threads: 1, cpus: [], reason: '1 thread: the test machine is shared' },
};

gate(
  'job → real hot-swap → real health gate → commit; an unloadable version rolls back; an unused model installs',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ota-runtime-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const served = join(dir, 'served');
    mkdirSync(served);
    const tiny = join(modelFixturesDir, 'tiny-llm');
    const broken = join(dir, 'broken');
    mkdirSync(broken);
    for (const f of ['config.json', 'llm_config.json', 'embeddings_bf16.bin', 'tokenizer.txt', 'llm.mnn']) {
      writeFileSync(join(broken, f), readFileSync(join(tiny, f)));
    }
    const v1 = await packModel(tiny, { id: 'tiny-llm', version: '1.0.0', outDir: served });
    const v2 = await packModel(tiny, { id: 'tiny-llm', version: '2.0.0', outDir: served });
    const v3 = await packModel(broken, { id: 'tiny-llm', version: '3.0.0', outDir: served });
    const spare = await packModel(tiny, { id: 'tiny-spare', version: '1.0.0', outDir: served });
    const srv = await servePackages(served);
    t.teardown(() => srv.close());

    const db = openStore(join(dir, 'agent.db'));
    const { store } = ModelStore.open({ dataDir: dir, db });
    const installer = new ModelStoreInstaller(store);
    await installer.install(v1.tarball, { id: 'tiny-llm', version: '1.0.0' });
    const log = createMemoryLogger(5000);
    const runtime = new Runtime({
      db,
      clock: systemClock,
      log,
      hosts: engineHostFactory({
        engineVersion: runtimeInfo().mnnVersion,
        log,
        cwd: join(dir, 'engine-tmp'),
      }),
      memory: procSystemMemory('/'),
      sources: { board: () => board, catalog: () => catalogFromStore(new ModelCatalog(store).variants()) },
      options: { memoryReserveBytes: 64 * MiB, drainTimeoutMs: 5_000, acquireTimeoutMs: 60_000 },
    });
    mkdirSync(join(dir, 'engine-tmp'));
    t.teardown(async () => {
      await runtime.stop();
      db.close();
    });
    await runtime.configure([
      {
        slot: 'voice.llm',
        use: { model: { id: 'tiny-llm', version: '1.0.0' } },
        priority: 80,
        contextTokens: 256,
        enabled: true,
      },
    ]);
    await runtime.settled();

    const key = generateSigningKey();
    const signer = parsePrivateKey(key.privateKeyPem);
    const config = { ...otaDefaults, trustedKeys: [{ publicKey: key.publicKey }] };
    const activation = runtimeActivationPort(runtime, { rollbackHold: store });
    const device = createOtaDevice({
      db,
      dataDir: dir,
      config: {
        ...config,
        health: { ...config.health, maxTtftMs: 10_000, minDecodeRatio: 0.05, maxNewTokens: 8 },
      },
      facts: { deviceId: 'dev-r', tags: [], arch: process.arch },
      time: { trustedNow: () => Date.now(), clockStatus: () => ({ synchronized: true, evidence: 'test' }) },
      logger: createMemoryLogger(),
      ports: { installer, activation, probe: runtimeHealthProbe(runtime) },
    });
    const finals = new Map<string, JobStatus>();
    device.runner.on('status', (s) => {
      if (['succeeded', 'failed', 'rolled-back', 'rejected'].includes(s.state)) finals.set(s.jobId, s);
    });
    device.runner.start();
    t.teardown(() => device.runner.stop());
    const pkg = (version: string, artifact: typeof v2.artifact, id = 'tiny-llm'): TargetPackage => ({
      id,
      version,
      artifacts: [artifact],
    });
    const targets = (n: number, p: TargetPackage) =>
      signTargets(
        {
          _type: 'mnn-edge/targets',
          specVersion: 1,
          version: n,
          expires: new Date(Date.now() + 3_600_000).toISOString(),
          packages: [p],
        },
        [signer],
      );

    const reasons: string[] = [];
    runtime.events.on('placement', (e) => reasons.push(e.reason));
    const otaAuthor = () => runtime.document().slots.find((s) => s.slot === 'voice.llm')?.ota?.author;
    t.is(await activation.activeVersion('tiny-llm'), '1.0.0');
    device.runner.submit({
      jobId: 'rt-2',
      package: { id: 'tiny-llm', version: '2.0.0' },
      targets: targets(1, pkg('2.0.0', v2.artifact)),
      baseUrl: srv.baseUrl,
    });
    await device.runner.idle();
    const ok = finals.get('rt-2')!;
    t.is(ok.state, 'succeeded', ok.message);
    t.is(ok.previousVersion, '1.0.0');
    t.true(ok.health!.decodeTokensPerSecond > 0);
    t.truthy(ok.health!.baselineDecodeTokensPerSecond, 'the previous version was measured before the swap');
    t.is(await activation.activeVersion('tiny-llm'), '2.0.0');
    const held = () =>
      store
        .list()
        .filter((p) => p.rollbackHold)
        .map((p) => `${p.id}@${p.version}`);
    t.deepEqual(held(), [], 'the commit released the hold on 1.0.0');
    // The job's own id travels to the runtime: the desired state's author and the replan reason name it.
    t.is(otaAuthor(), 'ota:rt-2');
    t.true(reasons.includes('OTA job rt-2 activates tiny-llm@2.0.0'), reasons.join('; '));
    t.log(`gate: ${ok.message} (baseline ${ok.health!.baselineDecodeTokensPerSecond?.toFixed(1)} tok/s)`);

    device.runner.submit({
      jobId: 'rt-3',
      package: { id: 'tiny-llm', version: '3.0.0' },
      targets: targets(2, pkg('3.0.0', v3.artifact)),
      baseUrl: srv.baseUrl,
    });
    await device.runner.idle();
    const bad = finals.get('rt-3')!;
    t.is(bad.state, 'rolled-back', bad.message);
    t.is(await activation.activeVersion('tiny-llm'), '2.0.0');
    t.log(`broken version: ${bad.reason}: ${bad.message}`);
    const answer = await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 4 });
    t.true(answer.text.length > 0, 'the rolled-back version still serves');
    t.deepEqual(held(), [], 'the rollback released the hold on 2.0.0');
    t.is(otaAuthor(), 'ota:rt-3:rollback');
    t.true(reasons.includes('OTA job rt-3 rolls back to tiny-llm@2.0.0'), reasons.join('; '));

    // A model pushed before any slot uses it: installed and selected, the job succeeds without a gate.
    device.runner.submit({
      jobId: 'rt-4',
      package: { id: 'tiny-spare', version: '1.0.0' },
      targets: targets(3, pkg('1.0.0', spare.artifact, 'tiny-spare')),
      baseUrl: srv.baseUrl,
    });
    await device.runner.idle();
    const unserved = finals.get('rt-4')!;
    t.is(unserved.state, 'succeeded', unserved.message);
    t.is(
      unserved.message,
      'tiny-spare@1.0.0 installed and selected; no enabled slot uses tiny-spare yet, so it is not serving and the health gate was skipped',
    );
    t.truthy(store.get({ id: 'tiny-spare', version: '1.0.0' }));
    t.is(await activation.activeVersion('tiny-llm'), '2.0.0', 'the other model kept serving');
  },
);
