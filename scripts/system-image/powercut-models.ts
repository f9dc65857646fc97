// The power-cut run's model writes, both in progress at the cut: an OTA model install (a signed job over the
// host's mosquitto, its package from a throttled server on the host, as scripts/system-image/checks-ota.ts runs
// OTA) and a hub pull through the agent's API (POST /api/hub/pulls) from a Hugging Face stand-in on the host
// (test/helpers/hub-standins.ts, as test/ pulls). Both are slowed down so that a cut at a random moment lands in
// their download, their install or after them. The guest reaches the host at 10.0.2.2; hubs are https-only except
// on loopback, so a small forwarder inside the guest (started after every boot) carries the guest's loopback
// ports of the stand-in to the host's.
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobStatus } from '../../ota/jobs/job.js';
import { packModel } from '../../ota/tools/pack.js';
import { connectOperator, publishJob, watchStatuses } from '../../ota/tools/publish.js';
import { generateSigningKey, parsePrivateKey, type SigningKey } from '../../ota/trust/keys.js';
import { signTargets } from '../../ota/trust/targets.js';
import {
  memoryFile,
  repoFromDir,
  type Standin,
  startHuggingFaceStandin,
} from '../../test/helpers/hub-standins.js';
import { modelFixturesDir } from '../../test/helpers/paths.js';
import { type Guest, sh } from './guest.js';
import { api } from './powercut-load.js';
import {
  HUB_MODEL,
  judgeModels,
  judgeStore,
  type ModelCheck,
  OTA_MODEL,
  storeFacts,
} from './powercut-store.js';

/** QEMU user-mode networking's address of the host (its loopback, as the guest sees it). */
const HOST = '10.0.2.2';
const GUEST_NODE = '/usr/lib/mnn-edge/node/bin/node';
const HUB_OWNER = 'taobao-mnn';
const HUB_REPO = 'tiny-llm-MNN';
export const HUB_SOURCE = `hf://${HUB_OWNER}/${HUB_REPO}`;
const FINAL_OTA = ['succeeded', 'failed', 'rolled-back', 'rejected'];
const FINAL_PULL = ['installed', 'unchanged', 'failed', 'cancelled'];

export interface PullView {
  id: string;
  state: string;
  phase: string;
  doneBytes: number;
  totalBytes: number;
  model?: string;
  fetchedBytes?: number;
  error?: { code: string; message: string };
}

/** One cut's model writes as the host saw them before the cut. */
export interface ModelWrites {
  ota: { jobId: string; version: string; states: string[] };
  pull: { id?: string; commit: string; last?: PullView; refused?: string };
  stop: () => Promise<void>;
}

/** A static file server with Range support whose bodies go out at most `rate()` bytes a second (0: no limit). */
async function throttledFiles(dir: string, rate: () => number): Promise<{ port: number; server: Server }> {
  const server = createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname.slice(1));
    let size: number;
    try {
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(name)) throw new Error('name');
      size = statSync(join(dir, name)).size;
    } catch {
      res.writeHead(404).end();
      return;
    }
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    const end = m?.[2] ? Math.min(size - 1, Number(m[2])) : size - 1;
    if (start >= size) {
      res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
      return;
    }
    res.writeHead(m ? 206 : 200, {
      'content-type': 'application/octet-stream',
      'content-length': String(end - start + 1),
      'accept-ranges': 'bytes',
      ...(m ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    void (async () => {
      const fd = openSync(join(dir, name), 'r');
      try {
        for (let at = start; at <= end && !res.destroyed; ) {
          const piece = Buffer.alloc(Math.min(8192, end - at + 1));
          const n = readSync(fd, piece, 0, piece.length, at);
          at += n;
          if (!res.write(piece.subarray(0, n))) await new Promise((r) => res.once('drain', r));
          const bps = rate();
          if (bps > 0) await sleep((n / bps) * 1000);
        }
        res.end();
      } finally {
        closeSync(fd);
      }
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, server };
}

export class ModelHost {
  readonly publicKey: string;
  readonly #signer: SigningKey;
  readonly #work: string;
  /** How the device reaches this host: QEMU's 10.0.2.2, or 127.0.0.1 for an agent on the host itself. */
  readonly #hostAddress: string;
  readonly #stamp = Math.floor(Date.now() / 60_000) % 1_000_000;
  #rate = 0;
  #packages?: { port: number; server: Server };
  #hub?: Standin;
  #operator?: Awaited<ReturnType<typeof connectOperator>>;
  /** Every OTA status the device reported, by job id, in order. */
  readonly statuses = new Map<string, JobStatus[]>();

  constructor(work: string, hostAddress = HOST) {
    this.#hostAddress = hostAddress;
    const key = generateSigningKey();
    this.publicKey = key.publicKey;
    this.#signer = parsePrivateKey(key.privateKeyPem);
    this.#work = join(work, 'model-packages');
    mkdirSync(this.#work, { recursive: true });
  }

  async start(brokerPort: number): Promise<void> {
    this.#packages = await throttledFiles(this.#work, () => this.#rate);
    this.#hub = await startHuggingFaceStandin([
      repoFromDir(HUB_OWNER, HUB_REPO, join(modelFixturesDir, 'tiny-llm')),
    ]);
    this.#operator = await connectOperator({ url: `mqtt://127.0.0.1:${brokerPort}` });
    await watchStatuses(this.#operator, (s) => {
      const list = this.statuses.get(s.jobId) ?? [];
      list.push(s);
      this.statuses.set(s.jobId, list);
    });
  }

  /** The stand-in's ports (its API and its CDN), which the guest's forwarder carries. */
  hubPorts(): number[] {
    return [this.#hub!.endpoint, this.#hub!.cdn].map((u) => Number(new URL(u).port));
  }

  hubEndpoint(): string {
    return this.#hub!.endpoint;
  }

  /** Bytes a second for both servers' bodies; 0 lifts the limit (for the checks after a boot). */
  setRate(bytesPerSecond: number): void {
    this.#rate = bytesPerSecond;
    this.#hub!.bytesPerSecond = bytesPerSecond;
  }

  /** Starts both writes for cut `cut`: a new OTA version of pc-ota, and a new commit of the hub repository. */
  async startWrites(cut: number, deviceId: string, port: number, token: string): Promise<ModelWrites> {
    const version = `1.${this.#stamp}.${cut}`;
    const packed = await packModel(join(modelFixturesDir, 'tiny-llm'), {
      id: OTA_MODEL,
      version,
      outDir: this.#work,
    });
    const jobId = `pc-${this.#stamp}-${cut}`;
    const targets = signTargets(
      {
        _type: 'mnn-edge/targets',
        specVersion: 1,
        // Newer than every earlier job's (anti-rollback), also across runs of one work folder.
        version: Math.floor(Date.now() / 1000),
        expires: new Date(Date.now() + 24 * 3_600_000).toISOString(),
        packages: [{ id: OTA_MODEL, version, artifacts: [packed.artifact] }],
      },
      [this.#signer],
    );
    await publishJob(
      this.#operator!,
      { device: deviceId },
      {
        jobId,
        package: { id: OTA_MODEL, version },
        targets,
        baseUrl: `http://${this.#hostAddress}:${this.#packages!.port}/`,
      },
    );
    // A new commit of the repository: one more small file, so the pull installs a new version.
    const repo = this.#hub!.repos.get(`${HUB_OWNER}/${HUB_REPO}`)!;
    const note = Buffer.from(`power cut ${this.#stamp}-${cut}\n`);
    repo.files = [...repo.files.filter((f) => f.path !== 'pc-cut.txt'), memoryFile('pc-cut.txt', note)];
    repo.commit = createHash('sha1').update(note).digest('hex');
    const writes: ModelWrites = {
      ota: { jobId, version, states: [] },
      pull: { commit: repo.commit },
      stop: async () => {},
    };
    const client = api(port, token);
    try {
      const res = await client.post('/api/hub/pulls', { source: HUB_SOURCE, id: HUB_MODEL });
      const text = await res.text();
      if (res.status === 202) writes.pull.id = (JSON.parse(text) as { pull: PullView }).pull.id;
      else writes.pull.refused = `HTTP ${res.status}: ${text.slice(0, 300)}`;
    } catch (err) {
      writes.pull.refused = (err as Error).message;
    }
    let running = true;
    const poll = (async () => {
      while (running) {
        const pulls = await client.get<{ pulls: PullView[] }>('/api/hub/pulls').catch(() => undefined);
        const mine = pulls?.pulls.find((p) => p.id === writes.pull.id);
        if (running && mine) writes.pull.last = mine;
        await sleep(1000);
      }
    })();
    writes.stop = async () => {
      running = false;
      await poll;
      writes.ota.states = (this.statuses.get(jobId) ?? []).map((s) => s.state);
    };
    return writes;
  }

  /** After a boot: the OTA job's final status (resumed from the journal, or received again: the job is
   *  retained on the device's topic). */
  async otaFinal(jobId: string, budgetMs: number): Promise<JobStatus> {
    const deadline = Date.now() + budgetMs;
    for (;;) {
      const final = this.statuses.get(jobId)?.find((s) => FINAL_OTA.includes(s.state));
      if (final) return final;
      if (Date.now() > deadline) {
        const seen = (this.statuses.get(jobId) ?? []).map((s) => s.state).join(' → ') || 'no status';
        throw new Error(`OTA job ${jobId} did not end within ${budgetMs / 1000} s (${seen})`);
      }
      await sleep(1000);
    }
  }

  async close(): Promise<void> {
    await this.#operator?.close();
    await this.#hub?.close();
    const server = this.#packages?.server;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }
}

/** The pull again after a boot (a pull is not journaled: the one in flight at the cut is gone with the agent,
 *  and the same pull must resume from hub-downloads/ or find the version installed); waits for its end. */
export async function pullAgain(port: number, token: string, budgetMs: number): Promise<PullView> {
  const client = api(port, token);
  const res = await client.post('/api/hub/pulls', { source: HUB_SOURCE, id: HUB_MODEL });
  const text = await res.text();
  if (res.status !== 202)
    throw new Error(`the pull after the boot: HTTP ${res.status}: ${text.slice(0, 300)}`);
  const id = (JSON.parse(text) as { pull: PullView }).pull.id;
  const deadline = Date.now() + budgetMs;
  for (;;) {
    const pulls = await client.get<{ pulls: PullView[] }>('/api/hub/pulls');
    const mine = pulls.pulls.find((p) => p.id === id);
    if (mine && FINAL_PULL.includes(mine.state)) return mine;
    if (Date.now() > deadline) throw new Error(`the pull after the boot did not end in ${budgetMs / 1000} s`);
    await sleep(2000);
  }
}

/** Inside the guest, after every boot: its loopback ports of the hub stand-in forwarded to the host's. */
export async function startHubForwarder(guest: Guest, ports: number[]): Promise<void> {
  const js =
    "const net=require('net');for(const p of process.argv.slice(1))net.createServer(c=>{const u=net.connect(+p,'" +
    HOST +
    "');c.pipe(u).pipe(c);u.on('error',()=>c.destroy());c.on('error',()=>u.destroy());}).listen(+p,'127.0.0.1')";
  await sh(
    guest,
    `systemctl stop pc-hub-forward 2>/dev/null || true
     systemd-run --unit=pc-hub-forward --collect ${GUEST_NODE} -e "${js}" ${ports.join(' ')}
     # Node takes seconds to start under TCG: a pull asked before it listens would fail with ECONNREFUSED.
     for p in ${ports.join(' ')}; do
       i=0; until ss -Hltn "sport = :$p" | grep -q .; do i=$((i+1)); [ $i -le 120 ] || exit 1; sleep 1; done
     done`,
    5 * 60_000,
  );
}

/** The agent's file-only settings the model writes need: the operator's key for OTA, the stand-in as the
 *  Hugging Face endpoint (plain http on the guest's loopback, through the forwarder). */
export function modelSettings(config: Record<string, unknown>, host: ModelHost): Record<string, unknown> {
  const models = (config['models'] ?? {}) as Record<string, unknown>;
  const sources = (models['sources'] ?? {}) as Record<string, unknown>;
  const ota = (config['ota'] ?? {}) as Record<string, unknown>;
  return {
    ...config,
    ota: { ...ota, trustedKeys: [{ publicKey: host.publicKey, comment: 'power cuts' }] },
    models: {
      ...models,
      sources: { ...sources, hf: { endpoint: host.hubEndpoint() }, allowLoopbackHttp: true },
    },
  };
}

/** After a boot: both writes brought to their end (the OTA job resumed, the pull asked again), then the store
 *  checked. Both servers go at full speed for this. */
export async function checkModelsAfterCut(
  guest: Guest,
  token: string,
  host: ModelHost,
  writes: ModelWrites,
): Promise<ModelCheck> {
  host.setRate(0);
  await startHubForwarder(guest, host.hubPorts());
  const otaFinal = await host.otaFinal(writes.ota.jobId, 10 * 60_000);
  const pull = await pullAgain(guest.port, token, 10 * 60_000);
  const facts = await storeFacts(guest);
  return judgeModels(writes, { otaFinal, pull }, judgeStore(facts, writes.pull.commit), facts.rows);
}
