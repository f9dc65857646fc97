// The power-cut run's guest before the first cut (powercut.ts): the agent pointed at the host's broker with
// telemetry once a second and the outbox's bounds spelled out, the run's OTA key and hub stand-in, the hub
// forwarder, and telemetry flowing from the restarted agent on its own schedule.
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BOOT_BUDGET_MS, type Guest, healthz, sh } from './guest.js';
import { guestExec } from './guest-agent.js';
import { DATA_DIR } from './powercut-checks.js';
import type { TelemetryRecorder } from './powercut-host.js';
import { apiReady } from './powercut-load.js';
import { type ModelHost, modelSettings, startHubForwarder } from './powercut-models.js';
import { TELEMETRY } from './powercut-report.js';

async function guestClockOffset(guest: Guest): Promise<{ offsetMs: number; errMs: number }> {
  const before = Date.now();
  const r = await guestExec(guest.qga, 'date +%s%3N', 30_000);
  const after = Date.now();
  return { offsetMs: Number(r.stdout.trim()) - (before + after) / 2, errMs: (after - before) / 2 };
}

/**
 * MNN_EDGE_POWERCUT_DIST: a `dist/` built from this checkout (`npm run build`) replaces the installed agent's
 * bundle (dist/agent/cli) in the guest, a development shortcut to try a fix without rebuilding the packages and
 * reinstalling them (the first boot's 20 min under TCG). CI and the bench install the packages under test.
 */
async function replaceAgentBundle(guest: Guest, dist: string, log: (line: string) => void): Promise<void> {
  const tgz = spawnSync('tar', ['czf', '-', '-C', join(dist, 'agent'), 'cli'], { maxBuffer: 64 << 20 });
  if (tgz.status !== 0) throw new Error(`tar of ${dist}/agent/cli failed: ${tgz.stderr}`);
  // Fetched by the guest's curl from the host (10.0.2.2): guest-exec arguments carrying the bundle in chunks
  // went unanswered under TCG.
  const server = createServer((_req, res) => res.end(tgz.stdout));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    await sh(
      guest,
      `set -e; d=/usr/lib/node_modules/mnn-edge/dist/agent; rm -rf /tmp/agent-cli; mkdir /tmp/agent-cli
       curl -fsS http://10.0.2.2:${port}/cli.tgz | tar xzf - -C /tmp/agent-cli
       rm -rf $d/cli; mv /tmp/agent-cli/cli $d/cli; sync`,
      5 * 60_000,
    );
  } finally {
    server.closeAllConnections();
    server.close();
  }
  log(
    `replaced the installed agent's bundle by ${dist}/agent/cli (${(tgz.stdout.length / 1024).toFixed(0)} KiB)`,
  );
}

/** Points the agent at the host's broker with telemetry once a second, trusts the run's OTA key, takes the hub
 *  stand-in as its Hugging Face, and restarts it. */
async function configureAgent(guest: Guest, brokerPort: number, models: ModelHost): Promise<void> {
  const config = modelSettings(
    JSON.parse(await sh(guest, 'cat /etc/mnn-edge/agent.json')) as Record<string, unknown>,
    models,
  );
  const mqtt = (config['mqtt'] ?? {}) as Record<string, unknown>;
  config['mqtt'] = {
    ...mqtt,
    url: `mqtt://10.0.2.2:${brokerPort}`,
    embeddedBroker: { ...((mqtt['embeddedBroker'] as object | undefined) ?? {}), enabled: false },
  };
  config['telemetry'] = {
    sampleIntervalMs: TELEMETRY.sampleIntervalMs,
    publishIntervalMs: TELEMETRY.publishIntervalMs,
    outbox: {
      flushIntervalMs: TELEMETRY.flushIntervalMs,
      flushMaxMessages: TELEMETRY.flushMaxMessages,
      flushMaxAcks: TELEMETRY.flushMaxAcks,
      maxInflight: TELEMETRY.maxInflight,
    },
  };
  const b64 = Buffer.from(`${JSON.stringify(config, null, 2)}\n`).toString('base64');
  await sh(
    guest,
    `echo ${b64} | base64 -d >/etc/mnn-edge/agent.json && sync && systemctl restart --no-block mnn-edge`,
  );
}

export async function waitFor(what: string, budgetMs: number, done: () => boolean): Promise<void> {
  const deadline = Date.now() + budgetMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${budgetMs / 1000} s`);
    await sleep(1000);
  }
}

/** After the first boot: the token and identity, the agent pointed at the host (restarted), the hub forwarder,
 *  and telemetry the restarted agent made on its schedule. */
export async function prepareGuest(
  guest: Guest,
  brokerPort: number,
  models: ModelHost,
  recorder: TelemetryRecorder,
  log: (line: string) => void,
): Promise<{ token: string; deviceId: string; firstSeq: number | undefined }> {
  const token = (await sh(guest, `cat ${DATA_DIR}/pairing-token`)).trim();
  const dist = process.env['MNN_EDGE_POWERCUT_DIST'];
  if (dist) await replaceAgentBundle(guest, dist, log);
  const restart = await guestClockOffset(guest);
  const restartGuestMs = Date.now() + restart.offsetMs;
  await configureAgent(guest, brokerPort, models);
  await healthz(guest.port, BOOT_BUDGET_MS);
  await apiReady(guest.port, token);
  await startHubForwarder(guest, models.hubPorts());
  const deviceId = (await sh(guest, `cat ${DATA_DIR}/device-id`)).trim();
  // Messages the outbox still held from an earlier run arrive first, on connect; the first cut must come once
  // the restarted agent itself publishes on its schedule (a cut during its start measured a 348 s "loss").
  const fresh = () => recorder.messages.filter((m) => m.ts > restartGuestMs);
  await waitFor(
    'fresh telemetry from the restarted agent at the host broker',
    10 * 60_000,
    () => fresh().length >= 10,
  );
  return { token, deviceId, firstSeq: fresh()[0]?.seq };
}
