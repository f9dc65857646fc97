import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { openStore } from '../../agent/store/database.js';
import { Downloader } from '../../lib/download/downloader.js';
import { createMemoryLogger } from '../../lib/log.js';
import type { ActivationOutcome, ActivationPort, HealthProbe } from '../../lib/ota-ports.js';
import { defaultHealthPolicy } from '../../ota/jobs/health-gate.js';
import type { JobStatus } from '../../ota/jobs/job.js';
import { JobRunner } from '../../ota/jobs/job-runner.js';
import { JobJournal } from '../../ota/jobs/journal.js';
import type { PackageInstaller } from '../../ota/jobs/ports.js';
import { servePackages } from '../../ota/tools/serve.js';
import { generateSigningKey, parsePrivateKey } from '../../ota/trust/keys.js';
import { signTargets } from '../../ota/trust/targets.js';
import { TrustStore, trustPolicyFromConfig } from '../../ota/trust/trust.js';

// A fleet pushes a model before any slot on the device uses it: the job installs and selects the version and
// succeeds, saying it does not serve yet and that the health gate did not run; nothing is rolled back.

const NOW = Date.UTC(2026, 10, 29);

/** Ports that record calls; activate() answers what the test sets, like the runtime's port would. */
class RecordingPorts implements ActivationPort, HealthProbe, PackageInstaller {
  calls: string[] = [];
  outcome: ActivationOutcome = { serving: false, why: 'no enabled slot uses m yet' };
  active: string | undefined;
  async install(_tarball: string, expect: { id: string; version: string }) {
    this.calls.push(`install ${expect.id}@${expect.version}`);
  }
  async activeVersion() {
    return this.active;
  }
  async activate(id: string, version: string) {
    this.calls.push(`activate ${id}@${version}`);
    if (this.outcome.serving) this.active = version;
    return this.outcome;
  }
  async rollback(id: string, version: string | undefined) {
    this.calls.push(`rollback ${id}@${version ?? '-'}`);
  }
  async commit(id: string, version: string, previous: string | undefined) {
    this.calls.push(`commit ${id}@${version} keep ${previous ?? '-'}`);
  }
  async measure(req: { modelId: string; version: string }) {
    this.calls.push(`probe ${req.modelId}@${req.version}`);
    return { ttftMs: 50, decodeTokensPerSecond: 20, text: 'hi' };
  }
}

async function runJob(t: ExecutionContext, ports: RecordingPorts): Promise<JobStatus[]> {
  const dir = mkdtempSync(join(tmpdir(), 'ota-unserved-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const served = join(dir, 'served');
  const staging = join(dir, 'staging');
  mkdirSync(served);
  mkdirSync(staging);
  const payload = randomBytes(10_000);
  writeFileSync(join(served, 'm-2.0.0.tar'), payload);
  const srv = await servePackages(served);
  t.teardown(() => srv.close());
  const key = generateSigningKey();
  const db = openStore(join(dir, 'agent.db'));
  t.teardown(() => void db.close());
  const time = { trustedNow: () => NOW, clockStatus: () => ({ synchronized: true, evidence: 'test' }) };
  const runner = new JobRunner({
    facts: { deviceId: 'dev1', tags: [], arch: 'arm64' },
    journal: new JobJournal(db, () => NOW),
    trust: new TrustStore(db, trustPolicyFromConfig([{ publicKey: key.publicKey }], 1), time),
    downloader: new Downloader({ headroomBytes: 0 }, { sleep: async () => {} }),
    installer: ports,
    activation: ports,
    probe: ports,
    stagingDir: staging,
    health: { ...defaultHealthPolicy, maxTtftMs: 500, minDecodeRatio: 0.8 },
    time,
    logger: createMemoryLogger(),
  });
  const statuses: JobStatus[] = [];
  runner.on('status', (s) => statuses.push(s));
  runner.start();
  t.teardown(() => runner.stop());
  const sha256 = createHash('sha256').update(payload).digest('hex');
  runner.submit({
    jobId: 'j1',
    package: { id: 'm', version: '2.0.0' },
    targets: signTargets(
      {
        _type: 'mnn-edge/targets',
        specVersion: 1,
        version: 1,
        expires: '2027-01-01T00:00:00Z',
        packages: [
          {
            id: 'm',
            version: '2.0.0',
            artifacts: [{ variant: 'cpu', name: 'm-2.0.0.tar', length: payload.length, sha256 }],
          },
        ],
      },
      [parsePrivateKey(key.privateKeyPem)],
    ),
    baseUrl: srv.baseUrl,
  });
  await runner.idle();
  return statuses;
}

test('a job for a model no slot uses succeeds as installed, says so, and skips the health gate', async (t) => {
  const ports = new RecordingPorts();
  const statuses = await runJob(t, ports);
  const last = statuses.at(-1)!;
  t.is(last.state, 'succeeded');
  t.is(
    last.message,
    'm@2.0.0 installed and selected; no enabled slot uses m yet, so it is not serving and the health gate was skipped',
  );
  t.is(last.reason, undefined);
  t.is(last.health, undefined);
  t.false(statuses.some((s) => s.state === 'health-check' || s.state === 'rolled-back'));
  t.deepEqual(ports.calls, ['install m@2.0.0', 'activate m@2.0.0', 'commit m@2.0.0 keep -']);
});

test('the same job for a model that serves still goes through the health gate', async (t) => {
  const ports = new RecordingPorts();
  ports.outcome = { serving: true };
  const statuses = await runJob(t, ports);
  t.is(statuses.at(-1)!.state, 'succeeded');
  t.is(statuses.at(-1)!.message, 'TTFT 50 ms, decode 20 tok/s');
  t.deepEqual(ports.calls, ['install m@2.0.0', 'activate m@2.0.0', 'probe m@2.0.0', 'commit m@2.0.0 keep -']);
});
