// Model OTA into the booted guest and across its reboot, as a fleet operator runs it (docs/OTA.md): a mosquitto on
// the host is the fleet's broker and a package server on the host serves the signed packages; the guest reaches
// both through user-mode networking's host address (10.0.2.2 is the host's loopback). The guest's agent.json gets
// the broker and the operator's targets key (file-only settings: a restart, not a reload, takes them). Then
// tiny-llm 2.0.0 (good) is installed over the imported 1.0.0 and passes the health gate; 3.0.0 (its weight file
// missing: the engine cannot load it) fails the gate and is rolled back to 2.0.0. After the reboot 2.0.0 serves.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { JobStatus } from '../../ota/jobs/job.js';
import { packModel } from '../../ota/tools/pack.js';
import { connectOperator, publishJob, watchStatuses } from '../../ota/tools/publish.js';
import { type PackageServer, servePackages } from '../../ota/tools/serve.js';
import { generateSigningKey, parsePrivateKey, type SigningKey } from '../../ota/trust/keys.js';
import { type Artifact, type SignedTargets, signTargets } from '../../ota/trust/targets.js';
import { type Mosquitto, startMosquitto } from '../../test/helpers/mosquitto.js';
import { modelFixturesDir } from '../../test/helpers/paths.js';
import { LLM_SLOT } from './checks-reload.js';
import { type Guest, healthz, sh } from './guest.js';
import { type AgentApi, type Checks, editAgentJson, servingVersion, unitProcess, waitFor } from './tier.js';

const FINAL = ['succeeded', 'failed', 'rolled-back', 'rejected'];
/** QEMU user-mode networking's address of the host (its loopback, as the guest sees it). */
const HOST = '10.0.2.2';

export interface OtaHost {
  broker: Mosquitto;
  server: PackageServer;
  publicKey: string;
  signer: SigningKey;
  artifacts: Record<'2.0.0' | '3.0.0', Artifact>;
  close: () => Promise<void>;
}

/** The operator's side, made before the boot: keys, the two packages, the broker and the package server. */
export async function prepareOta(work: string): Promise<OtaHost> {
  const served = join(work, 'ota-packages');
  const broken = join(work, 'tiny-llm-broken');
  mkdirSync(served);
  mkdirSync(broken);
  const tiny = join(modelFixturesDir, 'tiny-llm');
  for (const f of readdirSync(tiny).filter((f) => f !== 'llm.mnn.weight'))
    copyFileSync(join(tiny, f), join(broken, f));
  const good = await packModel(tiny, { id: 'tiny-llm', version: '2.0.0', outDir: served });
  const bad = await packModel(broken, { id: 'tiny-llm', version: '3.0.0', outDir: served });
  const key = generateSigningKey();
  const broker = await startMosquitto();
  const server = await servePackages(served, '127.0.0.1', 0);
  return {
    broker,
    server,
    publicKey: key.publicKey,
    signer: parsePrivateKey(key.privateKeyPem),
    artifacts: { '2.0.0': good.artifact, '3.0.0': bad.artifact },
    close: async () => {
      await server.close();
      await broker.close();
    },
  };
}

function targets(host: OtaHost, n: number, version: '2.0.0' | '3.0.0'): SignedTargets {
  return signTargets(
    {
      _type: 'mnn-edge/targets',
      specVersion: 1,
      version: n,
      expires: new Date(Date.now() + 24 * 3_600_000).toISOString(),
      packages: [{ id: 'tiny-llm', version, artifacts: [host.artifacts[version]] }],
    },
    [host.signer],
  );
}

/** One job to the device over the broker, and its final status as the device reports it back. */
async function runJob(
  host: OtaHost,
  deviceId: string,
  n: number,
  version: '2.0.0' | '3.0.0',
): Promise<JobStatus> {
  const client = await connectOperator({ url: host.broker.url });
  try {
    const jobId = `system-tier-${version}-${Date.now().toString(36)}`;
    const finals = new Map<string, JobStatus>();
    const stop = await watchStatuses(client, (s) => {
      if (s.jobId === jobId && FINAL.includes(s.state)) finals.set(jobId, s);
    });
    const server = new URL(host.server.baseUrl);
    await publishJob(
      client,
      { device: deviceId },
      {
        jobId,
        package: { id: 'tiny-llm', version },
        targets: targets(host, n, version),
        baseUrl: `http://${HOST}:${server.port}/`,
      },
    );
    const status = await waitFor(`OTA job ${jobId}'s final state`, 30 * 60_000, async () =>
      finals.get(jobId),
    );
    await stop();
    return status;
  } finally {
    await client.close();
  }
}

export async function otaInstallAndRollback(
  guest: Guest,
  agent: AgentApi,
  deviceId: string,
  host: OtaHost,
  checks: Checks,
): Promise<void> {
  const started = Date.now();
  const before = await unitProcess(guest);
  await editAgentJson(guest, (config) => {
    config['mqtt'] = { ...(config['mqtt'] as object), url: `mqtt://${HOST}:${host.broker.port}` };
    config['ota'] = {
      trustedKeys: [{ publicKey: host.publicKey, comment: 'system tier' }],
      // The gate compares the new version's speed with the old one's: on an emulated CPU shared with other work
      // both figures swing, so only a model that does not answer (the broken version) may fail it here.
      health: { maxTtftMs: 120_000, minDecodeRatio: 0.05, maxNewTokens: 8, timeoutMs: 10 * 60_000 },
    };
  });
  await sh(guest, 'systemctl restart mnn-edge', 10 * 60_000);
  await healthz(agent.port, 15 * 60_000);
  const after = await unitProcess(guest);
  const v1 = await servingOnceUp(agent, 'the restart');
  checks.check(
    'a restart takes the file-only settings (the host broker, the OTA key)',
    after.pid !== before.pid && v1 === '1.0.0',
    `MainPID ${before.pid} -> ${after.pid}, tiny-llm ${v1} serving`,
    started,
  );

  await checkJob(host, agent, deviceId, checks, {
    n: 1,
    version: '2.0.0',
    state: 'succeeded',
    what: 'OTA over MQTT installs tiny-llm 2.0.0 and its health gate passes',
  });
  await checkJob(host, agent, deviceId, checks, {
    n: 2,
    version: '3.0.0',
    state: 'rolled-back',
    what: 'OTA of a version failing its health probe is rolled back to 2.0.0',
  });
}

/**
 * One OTA job run to its final state, then the version serving after it: the job must end in `state` and 2.0.0
 * must serve (the good version installed, or kept by the rollback from the broken one).
 */
async function checkJob(
  host: OtaHost,
  agent: AgentApi,
  deviceId: string,
  checks: Checks,
  job: { n: number; version: '2.0.0' | '3.0.0'; state: JobStatus['state']; what: string },
): Promise<void> {
  const started = Date.now();
  const status = await runJob(host, deviceId, job.n, job.version);
  const serving = await servingVersion(agent, LLM_SLOT, 'tiny-llm');
  const reason = status.state === 'rolled-back' ? ` (${status.reason ?? ''})` : '';
  checks.check(
    job.what,
    status.state === job.state && serving === '2.0.0',
    `${status.state}${reason}: ${status.message ?? ''}; serving ${serving}`,
    started,
  );
}

/** The version of tiny-llm serving once one does (the agent restarted, the guest rebooted). */
function servingOnceUp(agent: AgentApi, when: string): Promise<string> {
  return waitFor(`tiny-llm serving after ${when}`, 20 * 60_000, () =>
    servingVersion(agent, LLM_SLOT, 'tiny-llm'),
  );
}

/** After the reboot: the version OTA left active (2.0.0, after the rollback from 3.0.0) serves again. */
export async function otaKeptAcrossReboot(agent: AgentApi, checks: Checks): Promise<void> {
  const started = Date.now();
  const version = await servingOnceUp(agent, 'the reboot');
  checks.check(
    'after the reboot the OTA-installed 2.0.0 serves (not 3.0.0, not 1.0.0)',
    version === '2.0.0',
    `serving ${version}`,
    started,
  );
}
