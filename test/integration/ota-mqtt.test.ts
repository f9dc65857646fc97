import { createHash } from 'node:crypto';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import test from 'ava';
import { connectAsync } from 'mqtt';
import { KvStore, openStore } from '../../agent/store/database.js';
import { Downloader } from '../../lib/download/downloader.js';
import { createMemoryLogger } from '../../lib/log.js';
import type { HealthProbe } from '../../lib/ota-ports.js';
import { ModelStore, writeTar } from '../../models/index.js';
import { otaDefaults } from '../../ota/config.js';
import type { JobStatus, OtaJob } from '../../ota/jobs/job.js';
import { LlmDemoProbe } from '../../ota/jobs/llm-demo-probe.js';
import { attachOtaToMqtt, clientTransport } from '../../ota/jobs/mqtt-device.js';
import { pullPackage } from '../../ota/jobs/pull-package.js';
import { ModelStoreInstaller } from '../../ota/jobs/store-adapter.js';
import { createOtaDevice, storePorts } from '../../ota/module.js';
import { packModel } from '../../ota/tools/pack.js';
import { connectOperator, publishJob, watchStatuses } from '../../ota/tools/publish.js';
import { servePackages } from '../../ota/tools/serve.js';
import { generateSigningKey, parsePrivateKey, type SigningKey } from '../../ota/trust/keys.js';
import { type Artifact, signTargets, type TargetsBody } from '../../ota/trust/targets.js';
import { llmDemoPath } from '../helpers/mnn-tools.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';
import { modelFixturesDir } from '../helpers/paths.js';

// End to end over a real mosquitto and a real HTTP server: operator packs and signs the tiny fixture model,
// a device installs 1.0.0 with `models pull`, then takes 2.0.0 as an OTA job through download, verification,
// the real ModelStore, activation and (with MNN's llm_demo present) a real health gate. Then the attack set.

const LLM_DEMO = llmDemoPath();
const tinyLlm = join(modelFixturesDir, 'tiny-llm');
const NOW = Date.now();

const gate = mosquittoAvailable() ? test.serial : test.skip;

interface World {
  dir: string;
  served: string;
  baseUrl: string;
  signer: SigningKey;
  publicKey: string;
  stranger: SigningKey;
  artifacts: Map<string, Artifact>;
  body: (version: number, packages: TargetsBody['packages'], expires?: string) => TargetsBody;
}

async function world(t: { teardown(fn: () => void | Promise<void>): void }): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'ota-e2e-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const served = join(dir, 'served');
  mkdirSync(served);
  const artifacts = new Map<string, Artifact>();
  for (const v of ['1.0.0', '2.0.0', '3.0.0']) {
    const r = await packModel(tinyLlm, { id: 'tiny-llm', version: v, outDir: served });
    artifacts.set(v, r.artifact);
    writeFileSync(join(dir, `manifest-${v}.json`), JSON.stringify(r.manifest));
  }
  const srv = await servePackages(served);
  t.teardown(() => srv.close());
  const key = generateSigningKey();
  return {
    dir,
    served,
    baseUrl: srv.baseUrl,
    signer: parsePrivateKey(key.privateKeyPem),
    publicKey: key.publicKey,
    stranger: parsePrivateKey(generateSigningKey().privateKeyPem),
    artifacts,
    body: (version, packages, expires = new Date(NOW + 86_400_000).toISOString()) => ({
      _type: 'mnn-edge/targets',
      specVersion: 1,
      version,
      expires,
      packages,
    }),
  };
}

async function* zeroChunks(total: number): AsyncGenerator<Uint8Array> {
  const chunk = Buffer.alloc(1024 * 1024);
  for (let left = total; left > 0; left -= chunk.length)
    yield left >= chunk.length ? chunk : chunk.subarray(0, left);
}

function pkg(id: string, version: string, artifact: Artifact): TargetsBody['packages'][number] {
  return { id, version, artifacts: [{ ...artifact }] };
}

gate('happy path and attack set over mosquitto and HTTP, into the real ModelStore', async (t) => {
  const w = await world(t);
  const broker = await startMosquitto();
  t.teardown(() => broker.close());

  // The device.
  const db = openStore(join(w.dir, 'device', 'agent.db'));
  t.teardown(() => void db.close());
  const { store } = ModelStore.open({ dataDir: join(w.dir, 'device'), db });
  const kv = new KvStore(db);
  const config = {
    ...otaDefaults,
    trustedKeys: [{ publicKey: w.publicKey }],
    // A small slow-retrieval window keeps the slow-server attack quick; loopback transfers are far above it.
    download: { ...otaDefaults.download, minBytesPerSecond: 1024, rateWindowMs: 1000 },
    health: { ...otaDefaults.health, maxTtftMs: 10_000, minDecodeRatio: 0.05, maxNewTokens: 8 },
  };
  const ports = storePorts(store, kv, config);
  const realMnn = existsSync(LLM_DEMO);
  // Without MNN the gate cannot run the model; a probe that only confirms the active files exist stands in.
  const probe: HealthProbe = realMnn
    ? new LlmDemoProbe({ binary: LLM_DEMO, modelDir: (id, version) => store.packageDir({ id, version }) })
    : {
        async measure(req) {
          if (!existsSync(join(store.packageDir({ id: req.modelId, version: req.version }), 'llm.mnn')))
            throw new Error('llm.mnn missing');
          return { ttftMs: 1, decodeTokensPerSecond: 100, text: 'stand-in' };
        },
      };
  if (!realMnn) t.log(`llm_demo not found at ${LLM_DEMO}: health gate runs with a stand-in probe`);
  const time = {
    trustedNow: () => Date.now(),
    clockStatus: () => ({ synchronized: true, evidence: 'test' }),
  };
  const device = createOtaDevice({
    db,
    dataDir: join(w.dir, 'device'),
    config,
    facts: { deviceId: 'dev-1', tags: ['lab'], arch: process.arch },
    time,
    logger: createMemoryLogger(),
    ports: { ...ports, probe },
  });

  // First boot: models pull of 1.0.0 (signed targets version 1 beside the package).
  const v1Doc = signTargets(w.body(1, [pkg('tiny-llm', '1.0.0', w.artifacts.get('1.0.0')!)]), [w.signer]);
  writeFileSync(join(w.served, 'targets.json'), JSON.stringify(v1Doc));
  const pulled = await pullPackage(
    { url: `${w.baseUrl}${w.artifacts.get('1.0.0')!.name}` },
    {
      trust: device.trust,
      downloader: new Downloader({ headroomBytes: 0 }),
      installer: {
        install: async (tarball, expect) => {
          await new ModelStoreInstaller(store).install(tarball, expect!);
          return expect!;
        },
      },
      stagingDir: join(w.dir, 'device', 'pull'),
      facts: { deviceId: 'dev-1', tags: [], arch: process.arch },
      readTargets: async (where) => JSON.parse((await (await fetch(where)).text()) as string),
    },
  );
  t.deepEqual(pulled.ref, { id: 'tiny-llm', version: '1.0.0' });
  t.is(pulled.trustedBy, 'signature');
  await ports.activation.activate('tiny-llm', '1.0.0');
  await ports.activation.commit('tiny-llm', '1.0.0');

  const deviceClient = await connectAsync(broker.url, { protocolVersion: 5, clientId: 'dev-1' });
  t.teardown(() => deviceClient.endAsync());
  device.runner.start();
  const linkLog = createMemoryLogger();
  const link = attachOtaToMqtt(
    clientTransport(deviceClient),
    device.runner,
    { deviceId: 'dev-1', tags: ['lab'] },
    linkLog,
    {
      store: device.roots,
      now: () => time.trustedNow(),
    },
  );
  t.teardown(() => link.detach());

  const operator = await connectOperator({ url: broker.url });
  t.teardown(() => operator.close());
  const seen: JobStatus[] = [];
  // The states as the device put them on the wire, before the operator's tools read them.
  const onWire: string[] = [];
  operator.onMessage((topic, payload) => {
    if (topic.endsWith('/ota/status') && payload.length > 0)
      onWire.push((JSON.parse(payload.toString()) as { jobId: string; state: string }).state);
  });
  const waiters = new Map<string, (s: JobStatus) => void>();
  await watchStatuses(operator, (s) => {
    seen.push(s);
    if (['succeeded', 'failed', 'rolled-back', 'rejected'].includes(s.state)) waiters.get(s.jobId)?.(s);
  });
  const run = (job: OtaJob, to: { device: string } | { tag: string } = { device: 'dev-1' }) =>
    new Promise<JobStatus>((resolve) => {
      waiters.set(job.jobId, resolve);
      void publishJob(operator, to, job);
    });

  // Happy path, addressed by tag.
  const v2 = w.artifacts.get('2.0.0')!;
  const docV2 = signTargets(w.body(2, [pkg('tiny-llm', '2.0.0', v2)]), [w.signer]);
  const done = await run(
    { jobId: 'job-2', package: { id: 'tiny-llm', version: '2.0.0' }, targets: docV2, baseUrl: w.baseUrl },
    { tag: 'lab' },
  );
  t.is(done.state, 'succeeded', done.message);
  t.deepEqual(
    [...new Set(seen.filter((s) => s.jobId === 'job-2').map((s) => s.state))],
    ['queued', 'downloading', 'installing', 'staged', 'activating', 'health-check', 'succeeded'],
  );
  // The install step keeps its old name on the wire, which operator tools before issue 44 know.
  t.true(onWire.includes('verifying'), onWire.join(' '));
  t.false(onWire.includes('installing'), onWire.join(' '));
  t.is(done.previousVersion, '1.0.0');
  t.true(done.health!.decodeTokensPerSecond > 0);
  t.log(`health gate: ${done.message}`);
  t.is(await ports.activation.activeVersion('tiny-llm'), '2.0.0');
  t.true(store.get({ id: 'tiny-llm', version: '2.0.0' })!.inUse);
  t.truthy(store.get({ id: 'tiny-llm', version: '1.0.0' }), 'previous version kept until GC');

  // The attack set: each rejected, 3.0.0 never installed, 2.0.0 stays active.
  const v3 = w.artifacts.get('3.0.0')!;
  const job = (jobId: string, targets: unknown): OtaJob => {
    const custom = targets as { doc?: unknown; baseUrl?: string };
    return {
      jobId,
      package: { id: 'tiny-llm', version: '3.0.0' },
      targets: (custom.doc ?? targets) as OtaJob['targets'],
      baseUrl: custom.baseUrl ?? w.baseUrl,
    };
  };
  const flippedName = 'tiny-llm-3.0.0-flipped.tar';
  const bytes = readFileSync(join(w.served, v3.name));
  bytes[bytes.length - 2000]! ^= 0x01;
  writeFileSync(join(w.served, flippedName), bytes);
  const evilName = 'tiny-llm-3.0.0-evil.tar';
  // A valid manifest first: the traversal entry must be what refuses the package.
  const manifest3 = readFileSync(join(w.dir, 'manifest-3.0.0.json'));
  await pipeline(
    writeTar([
      { path: 'mnn-edge.json', data: manifest3 },
      { path: '../../../tmp/owned', data: Buffer.from('x') },
    ]),
    createWriteStream(join(w.served, evilName)),
  );
  const evil = readFileSync(join(w.served, evilName));
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  // A gzip bomb: the manifest is honest, the archive header declares llm.mnn as 64 MiB of zeros.
  const bombName = 'tiny-llm-3.0.0-bomb.tar.gz';
  await pipeline(
    writeTar([
      { path: 'mnn-edge.json', data: manifest3 },
      { path: 'llm.mnn', size: 64 * 1024 * 1024, data: zeroChunks(64 * 1024 * 1024) },
    ]),
    createGzip(),
    createWriteStream(join(w.served, bombName)),
  );
  const bomb = readFileSync(join(w.served, bombName));
  const llmLength = (
    JSON.parse(manifest3.toString()) as { variants: { files: { path: string; length: number }[] }[] }
  ).variants[0]!.files.find((f) => f.path === 'llm.mnn')!.length;
  // A server that sends the real 3.0.0 package at 10 bytes/s.
  const slowServer = createServer((req, res) => {
    const body = readFileSync(join(w.served, v3.name));
    res.writeHead(200, { 'content-length': String(body.length) });
    let pos = 0;
    const timer = setInterval(() => res.write(body.subarray(pos, ++pos)), 100);
    res.on('close', () => clearInterval(timer));
    req.resume();
  });
  await new Promise<void>((resolve) => slowServer.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    slowServer.closeAllConnections();
    slowServer.close();
  });
  const slowUrl = `http://127.0.0.1:${(slowServer.address() as AddressInfo).port}/`;

  const tampered = signTargets(w.body(10, [pkg('tiny-llm', '3.0.0', v3)]), [w.signer]);
  tampered.signed.packages[0]!.artifacts[0]!.sha256 = sha(bytes);
  const attacks: [string, unknown, string, string][] = [
    [
      'flipped',
      signTargets(w.body(3, [pkg('tiny-llm', '3.0.0', { ...v3, name: flippedName })]), [w.signer]),
      'hash-mismatch',
      `Downloaded ${w.baseUrl}${flippedName} has sha256 ${sha(bytes)}, expected ${v3.sha256}`,
    ],
    [
      'length',
      signTargets(w.body(4, [pkg('tiny-llm', '3.0.0', { ...v3, length: v3.length + 512 })]), [w.signer]),
      'length-mismatch',
      `Artifact at ${w.baseUrl}${v3.name} is ${v3.length} bytes, expected ${v3.length + 512}`,
    ],
    [
      'badsig',
      tampered,
      'bad-signature',
      `Targets signature by key ${w.signer.keyId.slice(0, 12)} does not verify`,
    ],
    [
      'unknown',
      signTargets(w.body(11, [pkg('tiny-llm', '3.0.0', v3)]), [w.stranger]),
      'unknown-key',
      `Targets are signed only by unknown key(s) ${w.stranger.keyId.slice(0, 12)}`,
    ],
    [
      'replay',
      signTargets(w.body(1, [pkg('tiny-llm', '3.0.0', v3)]), [w.signer]),
      'rollback',
      'Targets version 1 is older than the trusted version 4',
    ],
    [
      'expired',
      signTargets(w.body(12, [pkg('tiny-llm', '3.0.0', v3)], '2026-01-01T00:00:00Z'), [w.signer]),
      'expired',
      '',
    ],
    [
      'traversal',
      signTargets(
        w.body(5, [
          pkg('tiny-llm', '3.0.0', { ...v3, name: evilName, length: evil.length, sha256: sha(evil) }),
        ]),
        [w.signer],
      ),
      'unsafe-archive',
      'entry "../../../tmp/owned" has a path that leaves the package (..)',
    ],
    [
      'bomb',
      signTargets(
        w.body(7, [
          pkg('tiny-llm', '3.0.0', { ...v3, name: bombName, length: bomb.length, sha256: sha(bomb) }),
        ]),
        [w.signer],
      ),
      'manifest-mismatch',
      `File llm.mnn is ${64 * 1024 * 1024} bytes but the manifest says ${llmLength}`,
    ],
    [
      'slow',
      { doc: signTargets(w.body(8, [pkg('tiny-llm', '3.0.0', v3)]), [w.signer]), baseUrl: slowUrl },
      'slow-retrieval',
      '',
    ],
  ];
  for (const [name, doc, reason, message] of attacks) {
    const trustedBefore = device.trust.last()?.version;
    const s = await run(job(`attack-${name}`, doc));
    t.is(s.state, 'rejected', name);
    t.is(s.reason as string | undefined, reason, name);
    if (message) t.is(s.message, message, name);
    t.falsy(store.get({ id: 'tiny-llm', version: '3.0.0' }), `${name}: nothing installed`);
    t.is(await ports.activation.activeVersion('tiny-llm'), '2.0.0', `${name}: still 2.0.0`);
    if (['badsig', 'unknown', 'replay', 'expired'].includes(name)) {
      t.is(
        device.trust.last()?.version,
        trustedBefore,
        `${name}: nothing trusted from the rejected document`,
      );
    }
  }
  t.false(existsSync('/tmp/owned'));
  t.deepEqual(
    store.list().map((p) => p.version),
    ['1.0.0', '2.0.0'],
  );

  // A correctly signed package the engine cannot load (llm.mnn.weight missing, which MNN requires even when
  // empty): installs, activates, fails the gate, rolled back.
  if (realMnn) {
    const broken = join(w.dir, 'broken');
    mkdirSync(broken);
    for (const f of ['config.json', 'llm_config.json', 'embeddings_bf16.bin', 'tokenizer.txt', 'llm.mnn']) {
      writeFileSync(join(broken, f), readFileSync(join(tinyLlm, f)));
    }
    const r = await packModel(broken, { id: 'tiny-llm', version: '4.0.0', outDir: w.served });
    const docV6 = signTargets(w.body(9, [pkg('tiny-llm', '4.0.0', r.artifact)]), [w.signer]);
    const s = await run({
      jobId: 'job-4',
      package: { id: 'tiny-llm', version: '4.0.0' },
      targets: docV6,
      baseUrl: w.baseUrl,
    });
    t.is(s.state, 'rolled-back', s.message);
    t.is(s.reason, 'load-failed');
    t.regex(
      s.message ?? '',
      /^health probe failed: llm_demo .*weight file not found.*; rolled back to 2\.0\.0$/,
    );
    t.is(await ports.activation.activeVersion('tiny-llm'), '2.0.0');
    t.log(`broken package: ${s.message}`);
  }
  // 1 MiB of nesting as a job payload: refused with one log line, nothing queued.
  const jobsBefore = device.journal.list().length;
  await operator.publish('mnn-edge/dev-1/ota/jobs', `${'['.repeat(512 * 1024)}${']'.repeat(512 * 1024)}`, {
    qos: 1,
  });
  const invalidUtf8 = Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]);
  await operator.publish('mnn-edge/dev-1/ota/jobs', invalidUtf8, { qos: 1 });
  for (let i = 0; i < 100 && linkLog.lines.filter((l) => l.includes('ota message refused')).length < 2; i++)
    await new Promise((r) => setTimeout(r, 50));
  const refusedLines = linkLog.lines.filter((l) => l.includes('ota message refused'));
  t.is(refusedLines.length, 2);
  t.true(refusedLines[0]!.includes('"code":"ETOODEEP"'), refusedLines[0]);
  t.true(refusedLines[1]!.includes('"code":"EPAYLOAD"'), refusedLines[1]);
  t.is(device.journal.list().length, jobsBefore);
  await device.runner.stop();
});
