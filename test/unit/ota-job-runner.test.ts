import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import { Downloader } from '../../lib/download/downloader.js';
import { createMemoryLogger } from '../../lib/log.js';
import type { ActivationPort, HealthProbe, ProbeResult } from '../../lib/ota-ports.js';
import { defaultHealthPolicy } from '../../ota/jobs/health-gate.js';
import { type JobStatus, jobStateOnWire, type OtaJob } from '../../ota/jobs/job.js';
import { JobRunner } from '../../ota/jobs/job-runner.js';
import { JobJournal } from '../../ota/jobs/journal.js';
import type { PackageInstaller } from '../../ota/jobs/ports.js';
import { parseStatus } from '../../ota/tools/publish.js';
import { servePackages } from '../../ota/tools/serve.js';
import { generateSigningKey, parsePrivateKey } from '../../ota/trust/keys.js';
import { OtaRejection } from '../../ota/trust/rejection.js';
import { signTargets, type TargetsBody } from '../../ota/trust/targets.js';
import { TrustStore, trustPolicyFromConfig } from '../../ota/trust/trust.js';

const NOW = Date.UTC(2026, 10, 29);

/** Test doubles for the ports: an in-memory "runtime" that records what it was asked to do. */
class FakeRuntime implements ActivationPort, HealthProbe, PackageInstaller {
  active = new Map<string, string>();
  installed: string[] = [];
  calls: string[] = [];
  probeResults = new Map<string, ProbeResult | Error>();
  installError: Error | undefined;
  async install(_tarball: string, expect: { id: string; version: string }) {
    this.calls.push(`install ${expect.id}@${expect.version}`);
    if (this.installError) throw this.installError;
    this.installed.push(`${expect.id}@${expect.version}`);
  }
  async activeVersion(id: string) {
    return this.active.get(id);
  }
  async activate(id: string, version: string, jobId: string) {
    this.calls.push(`activate ${id}@${version} for ${jobId}`);
    this.active.set(id, version);
  }
  async rollback(id: string, version: string | undefined, jobId: string) {
    this.calls.push(`rollback ${id}@${version ?? '-'} for ${jobId}`);
    if (version === undefined) this.active.delete(id);
    else this.active.set(id, version);
  }
  async commit(id: string, version: string, previous: string | undefined) {
    this.calls.push(`commit ${id}@${version} keep ${previous ?? '-'}`);
  }
  async measure(req: { modelId: string; version: string }) {
    const active = this.active.get(req.modelId);
    this.calls.push(`probe ${req.modelId}@${active}`);
    const r = this.probeResults.get(`${req.modelId}@${active}`) ?? {
      ttftMs: 50,
      decodeTokensPerSecond: 20,
      text: 'hi',
    };
    if (r instanceof Error) throw r;
    return r;
  }
}

async function setup(t: { teardown(fn: () => void | Promise<void>): void }, payload = randomBytes(40_000)) {
  const dir = mkdtempSync(join(tmpdir(), 'ota-runner-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const served = join(dir, 'served');
  const staging = join(dir, 'staging');
  mkdirSync(served);
  mkdirSync(staging);
  writeFileSync(join(served, 'm-2.0.0.tar'), payload);
  const srv = await servePackages(served);
  t.teardown(() => srv.close());
  const key = generateSigningKey();
  const signer = parsePrivateKey(key.privateKeyPem);
  const db = openStore(join(dir, 'agent.db'));
  t.teardown(() => void db.close());
  const time = { trustedNow: () => NOW, clockStatus: () => ({ synchronized: true, evidence: 'test' }) };
  const rt = new FakeRuntime();
  const statuses: JobStatus[] = [];
  const makeRunner = () => {
    const runner = new JobRunner({
      facts: { deviceId: 'dev1', tags: ['lab'], arch: 'arm64' },
      journal: new JobJournal(db, () => NOW),
      trust: new TrustStore(db, trustPolicyFromConfig([{ publicKey: key.publicKey }], 1), time),
      downloader: new Downloader({ headroomBytes: 0 }, { sleep: async () => {} }),
      installer: rt,
      activation: rt,
      probe: rt,
      stagingDir: staging,
      health: { ...defaultHealthPolicy, maxTtftMs: 500, minDecodeRatio: 0.8 },
      time,
      logger: createMemoryLogger(),
    });
    runner.on('status', (s) => statuses.push(s));
    return runner;
  };
  const body = (version: number, sha = createHash('sha256').update(payload).digest('hex')): TargetsBody => ({
    _type: 'mnn-edge/targets',
    specVersion: 1,
    version,
    expires: '2027-01-01T00:00:00Z',
    packages: [
      {
        id: 'm',
        version: '2.0.0',
        artifacts: [{ variant: 'cpu', name: 'm-2.0.0.tar', length: payload.length, sha256: sha }],
      },
    ],
  });
  const job = (jobId: string, targetsVersion = 1, sha?: string): OtaJob => ({
    jobId,
    package: { id: 'm', version: '2.0.0' },
    targets: signTargets(body(targetsVersion, sha), [signer]),
    baseUrl: srv.baseUrl,
  });
  return { dir, db, rt, statuses, makeRunner, job, staging };
}

test('happy path: every state reported in order, the gate passes against the previous version, staging cleaned', async (t) => {
  const { rt, statuses, makeRunner, job, staging } = await setup(t);
  rt.active.set('m', '1.0.0');
  rt.probeResults.set('m@1.0.0', { ttftMs: 60, decodeTokensPerSecond: 20, text: 'x' });
  rt.probeResults.set('m@2.0.0', { ttftMs: 70, decodeTokensPerSecond: 18, text: 'y' });
  const runner = makeRunner();
  runner.start();
  runner.submit(job('j1'));
  await runner.idle();
  t.deepEqual(
    [...new Set(statuses.map((s) => s.state))],
    ['queued', 'downloading', 'installing', 'staged', 'activating', 'health-check', 'succeeded'],
  );
  const last = statuses.at(-1)!;
  t.is(last.message, 'TTFT 70 ms, decode 18 tok/s');
  t.is(last.previousVersion, '1.0.0');
  t.is(last.health?.baselineDecodeTokensPerSecond, 20);
  t.deepEqual(rt.calls, [
    'install m@2.0.0',
    'probe m@1.0.0',
    // The job's own id reaches the port (the runtime names it as the author of the version it selects).
    'activate m@2.0.0 for j1',
    'probe m@2.0.0',
    'commit m@2.0.0 keep 1.0.0',
  ]);
  t.deepEqual(readdirSync(staging), []);
});

test('the install step is installing in the journal and verifying on the wire; a reader takes either', (t) => {
  // Operator tools before issue 44 hold an unknown state for a malformed status (a failed device in a rollout).
  t.is(jobStateOnWire('installing'), 'verifying');
  t.is(jobStateOnWire('downloading'), 'downloading');
  const wire = (state: string) =>
    Buffer.from(
      JSON.stringify({ jobId: 'j1', deviceId: 'd', state, package: { id: 'm', version: '2' }, ts: 1 }),
    );
  t.is(parseStatus(wire('verifying'))?.state, 'installing');
  t.is(parseStatus(wire('installing'))?.state, 'installing');
  t.is(parseStatus(wire('staged'))?.state, 'staged');
  t.is(parseStatus(wire('unpacking')), undefined);
});

test('same job id twice: answered with its status, run once', async (t) => {
  const { rt, makeRunner, job } = await setup(t);
  const runner = makeRunner();
  runner.start();
  const j = job('j1');
  runner.submit(j);
  await runner.idle();
  const again = runner.submit(j);
  await runner.idle();
  t.is(again?.state, 'succeeded');
  t.is(rt.calls.filter((c) => c.startsWith('install')).length, 1);
});

test('health gate failure rolls back automatically and reports the numbers', async (t) => {
  const { rt, statuses, makeRunner, job } = await setup(t);
  rt.active.set('m', '1.0.0');
  rt.probeResults.set('m@1.0.0', { ttftMs: 60, decodeTokensPerSecond: 20, text: 'x' });
  rt.probeResults.set('m@2.0.0', { ttftMs: 900, decodeTokensPerSecond: 10, text: 'y' });
  const runner = makeRunner();
  runner.start();
  runner.submit(job('j1'));
  await runner.idle();
  const last = statuses.at(-1)!;
  t.is(last.state, 'rolled-back');
  t.is(last.reason, 'health-gate');
  t.is(
    last.message,
    'TTFT 900 ms > max 500 ms; decode 10 tok/s < 0.8 × 20 tok/s of 1.0.0; rolled back to 1.0.0',
  );
  t.deepEqual(last.health, {
    ttftMs: 900,
    decodeTokensPerSecond: 10,
    baselineDecodeTokensPerSecond: 20,
    maxTtftMs: 500,
    minDecodeRatio: 0.8,
  });
  t.is(rt.active.get('m'), '1.0.0');
  t.true(rt.calls.includes('rollback m@1.0.0 for j1'));
});

test('a model that does not load is rolled back to no version when it was the first', async (t) => {
  const { rt, statuses, makeRunner, job } = await setup(t);
  rt.probeResults.set('m@2.0.0', new Error('LLM weight file not found'));
  const runner = makeRunner();
  runner.start();
  runner.submit(job('j1'));
  await runner.idle();
  const last = statuses.at(-1)!;
  t.is(last.state, 'rolled-back');
  t.is(last.reason, 'load-failed');
  t.is(last.message, 'health probe failed: LLM weight file not found; rolled back to no version');
  t.false(rt.active.has('m'));
});

test('a job for the version already active that fails its check keeps that version, never none', async (t) => {
  const { rt, statuses, makeRunner, job } = await setup(t);
  rt.active.set('m', '2.0.0');
  rt.probeResults.set('m@2.0.0', new Error('probe timed out'));
  const runner = makeRunner();
  runner.start();
  runner.submit(job('j1'));
  await runner.idle();
  const last = statuses.at(-1)!;
  t.is(last.state, 'rolled-back');
  t.is(last.message, 'health probe failed: probe timed out; rolled back to 2.0.0');
  t.is(rt.active.get('m'), '2.0.0');
});

test('a flipped byte is rejected before install; an unsafe archive is rejected by the installer', async (t) => {
  const { rt, statuses, makeRunner, job } = await setup(t);
  const runner = makeRunner();
  runner.start();
  runner.submit(job('j1', 1, 'b'.repeat(64)));
  await runner.idle();
  t.is(statuses.at(-1)?.state, 'rejected');
  t.is(statuses.at(-1)?.reason, 'hash-mismatch');
  rt.installError = new OtaRejection(
    'unsafe-archive',
    'entry "../x" has a path that leaves the package (..)',
  );
  runner.submit(job('j2', 2));
  await runner.idle();
  t.is(statuses.at(-1)?.reason, 'unsafe-archive');
  t.deepEqual(rt.installed, []);
  t.false(rt.active.has('m'));
});

test('replayed older targets are rejected once a newer version is trusted', async (t) => {
  const { statuses, makeRunner, job } = await setup(t);
  const runner = makeRunner();
  runner.start();
  runner.submit(job('j1', 5));
  await runner.idle();
  runner.submit(job('j2', 4));
  await runner.idle();
  t.is(statuses.at(-1)?.state, 'rejected');
  t.is(statuses.at(-1)?.message, 'Targets version 4 is older than the trusted version 5');
});

test('a malformed job with an id is rejected with the schema error', async (t) => {
  const { makeRunner } = await setup(t);
  const runner = makeRunner();
  const s = runner.submit({
    jobId: 'bad',
    package: { id: 'm', version: '1' },
    baseUrl: 'ftp://x',
    targets: {},
  });
  t.is(s?.state, 'rejected');
  t.is(s?.message, 'Invalid OTA job: baseUrl: expected a string matching /^https?:///, got "ftp://x"');
});

test('restart resumes from the journal; repeated crashes during health check end in rollback', async (t) => {
  const { db, rt, statuses, makeRunner, job } = await setup(t);
  rt.active.set('m', '1.0.0');
  const journal = new JobJournal(db, () => NOW);
  const j = job('j1');
  // A previous process got as far as health-check three times and died each time.
  journal.insert(j);
  journal.update('j1', { state: 'health-check', previousVersion: '1.0.0', attempts: 3 });
  rt.active.set('m', '2.0.0');
  const runner = makeRunner();
  runner.start();
  await runner.idle();
  t.is(statuses.at(-1)?.state, 'rolled-back');
  t.is(statuses.at(-1)?.reason, 'crashed');
  t.is(
    statuses.at(-1)?.message,
    'activation or health check of m@2.0.0 was interrupted 3 times; rolled back to 1.0.0',
  );
  t.is(rt.active.get('m'), '1.0.0');
  // A job interrupted while downloading continues and finishes.
  journal.insert(job('j2'));
  journal.update('j2', { state: 'queued' });
  runner.start();
  await runner.idle();
  t.is(runner.status('j2')?.state, 'succeeded');
  t.true(existsSync(join(db.name)));
});
