// bench/soak: the built daemon (`mnn-edge run` from dist/, the systemd unit's node flags) under a mixed load for
// SOAK_MINUTES (30 by default; `npm run bench` runs 5), with mosquitto as its broker and, when MNN is installed,
// the fixture models on the voice and vision slots. Load: fleet pings over MQTT, Home Assistant's Wyoming
// `describe`, the dashboard overview and telemetry every second (published every 5 s); with the engine also
// Wyoming voice turns (speech → transcript → handled → synthesize), dashboard voice-socket turns, OpenAI
// requests (plain, streamed, cancelled after the first chunk) and a camera watch on an ffmpeg test video.
// Faults, one after another every FAULT_EVERY_S: a broker restart, a hot swap (a fleet set-placement between two
// installed versions: blue/green), a SIGKILL of a random engine host. SOAK_FAULTS picks some of them (for example
// `broker-restart,hot-swap`: hosts other than the swapped slot's then live the whole run, which the engine hosts'
// in-life figures need).
// Sampled every few seconds: RSS, descriptors and threads of the agent and each engine host (/proc), the agent's
// heap, handles and timers (its own telemetry), the outbox depth, the SQLite files (WAL included) and the data
// directory. After warm-up a slope is fitted to each. Targets (issue 31): agent RSS ≤ 1 MB/hour; host RSS flat
// within noise; no growth in descriptors, threads or timers; disk within the configured limits; no request
// fails except by an injected fault (each such failure is counted by cause).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { STORE_FILE } from '../agent/main.js';
import { FleetOperator } from '../agent/operator/fleet/operator.js';
import { openStore } from '../agent/store/database.js';
import { allMigrations } from '../agent/store/migrations.js';
import { TIMER_CENSUS_ENV } from '../agent/telemetry/timer-census.js';
import { engineAvailability, unavailableMessage } from '../engine/index.js';
import { createMemoryLogger } from '../lib/log.js';
import { ModelStore } from '../models/index.js';
import { startMosquitto } from '../test/helpers/mosquitto.js';
import { modelFixturesDir } from '../test/helpers/paths.js';
import { agentCli, daemonEnvironment, daemonNodeFlags, ensureBuilt } from './lib/dist.js';
import { envJsonObject } from './lib/env-json.js';
import * as load from './lib/soak-load.js';
import { engineHostPids, fileBytes, procFacts, treeBytes } from './lib/soak-probe.js';
import { type Fault, type Req, report, type Sample } from './lib/soak-report.js';

const MINUTES = Number(process.env['SOAK_MINUTES'] ?? 30);
const SAMPLE_S = Math.max(2, Math.min(30, Math.round((MINUTES * 60) / 400)));
// SOAK_FAULT_EVERY_S sets the pace (a short run that repeats one fault many times, to see what it costs).
const FAULT_EVERY_S = Number(
  process.env['SOAK_FAULT_EVERY_S'] ?? Math.max(40, Math.min(150, (MINUTES * 60) / 12)),
);
const DEVICE = 'soak-dev';
const FAULT_KINDS = ['broker-restart', 'hot-swap', 'host-kill'] as const;
type FaultKind = (typeof FAULT_KINDS)[number];
const chosenFaults = faultKinds(process.env['SOAK_FAULTS']);

/** SOAK_AGENT_ENV: a JSON object of variables for the agent alone, e.g. a heap profiler's LD_PRELOAD (set for the
 *  whole soak it would profile the load generator too). */
function agentOnlyEnv(): Record<string, string> {
  const vars = envJsonObject('SOAK_AGENT_ENV', 'a JSON object of strings');
  return Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, String(v)]));
}

/** SOAK_FAULTS: a comma-separated subset of FAULT_KINDS (all of them when unset); a typo stops the soak. */
function faultKinds(spec: string | undefined): readonly FaultKind[] {
  if (spec === undefined || spec.trim() === '') return FAULT_KINDS;
  const kinds = spec.split(',').map((k) => k.trim());
  const unknown = kinds.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0)
    throw new Error(
      `SOAK_FAULTS: unknown fault ${unknown.join(', ')}; choose from ${FAULT_KINDS.join(', ')}`,
    );
  return FAULT_KINDS.filter((k) => kinds.includes(k));
}
/** A request still unanswered after this counts as failed (and the soak moves on). */
const REQUEST_DEADLINE_MS = 180_000;

/** `p`, or a rejection naming `what` after `ms`: no single stuck request may stall the soak or its ending. */
function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const engine = engineAvailability();
const withEngine = engine.available;
if (!withEngine)
  console.log(
    `SKIP soak engine load: ${unavailableMessage(engine.reason)}; the agent-side load and faults still run`,
  );

async function importFixtures(dataDir: string): Promise<void> {
  const db = openStore(join(dataDir, STORE_FILE), { migrations: allMigrations });
  const { store } = ModelStore.open({ dataDir, db, log: createMemoryLogger() });
  for (const name of ['silero-vad', 'tiny-omni-audio', 'tiny-vlm'])
    await store.import(join(modelFixturesDir, name), { version: '1.0.0' });
  // Two versions of the LLM: the hot swap moves voice.llm between them.
  for (const version of ['1.0.0', '1.0.1'])
    await store.import(join(modelFixturesDir, 'tiny-llm'), { version });
  store.close();
  db.close();
}

function writeConfig(dir: string, brokerUrl: string, camera: string | undefined): string {
  const engineParts = withEngine
    ? {
        slots: {
          'voice.vad': { model: 'silero-vad' },
          'voice.asr': { model: 'tiny-omni-audio' },
          'voice.llm': { model: 'tiny-llm', version: '1.0.0' },
          'vision.vlm': { model: 'tiny-vlm' },
        },
        voice: { maxNewTokens: 16 },
        ...(camera ? { vision: { camera, watch: { enabled: true, intervalS: 20 } } } : {}),
      }
    : {};
  const path = join(dir, 'agent.json');
  writeFileSync(
    path,
    JSON.stringify({
      deviceId: DEVICE,
      http: { bind: '127.0.0.1', port: 0 },
      mqtt: { url: brokerUrl, reconnect: { minMs: 200, maxMs: 2000 }, keepaliveSec: 5 },
      telemetry: { sampleIntervalMs: 1000, publishIntervalMs: 5000 },
      wyoming: { enabled: true, bind: '127.0.0.1', port: 0, mdns: false },
      ...engineParts,
    }),
  );
  return path;
}

/** An ffmpeg test pattern as the camera (a moving test source, 2 fps). */
function testVideo(dir: string): string | undefined {
  const path = join(dir, 'camera.mp4');
  const r = spawnSync('ffmpeg', [
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    'testsrc=size=320x240:rate=2',
    '-t',
    '120',
    '-pix_fmt',
    'yuv420p',
    path,
  ]);
  return r.status === 0 ? path : undefined;
}

interface Daemon {
  child: ChildProcess;
  http: string;
  wyomingPort: number;
  errors: string[];
}

async function startDaemon(configPath: string, dataDir: string): Promise<Daemon> {
  const child = spawn(
    process.execPath,
    [...daemonNodeFlags(), agentCli, 'run', '--config', configPath, '--data-dir', dataDir],
    {
      stdio: ['ignore', 'pipe', 'pipe'], // The timer census (agent/telemetry/timer-census.ts): agent.timers_all counts the unref'd timers too.
      env: {
        ...process.env,
        ...daemonEnvironment(),
        MNN_EDGE_DATA_DIR: '',
        [TIMER_CENSUS_ENV]: '1', // SOAK_AGENT_ENV='{"MNN_EDGE_TIMER_CENSUS":"0"}' runs the agent without it.
        ...agentOnlyEnv(),
      },
    },
  );
  const errors: string[] = [];
  let http = 0;
  let wyoming = 0;
  let partial = '';
  const onLine = (line: string) => {
    if (line.includes('"level":"error"')) errors.push(line.slice(0, 400));
    if (!http && line.includes('"msg":"listening"')) http = Number(/"port":(\d+)/.exec(line)?.[1] ?? 0);
    if (!wyoming && line.includes('Wyoming server listening'))
      wyoming = Number(/"port":(\d+)/.exec(line)?.[1] ?? 0);
  };
  child.stdout!.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) onLine(l);
  });
  child.stderr!.on('data', (d: Buffer) => errors.push(`stderr: ${d.toString().slice(0, 400)}`));
  const deadline = performance.now() + 120_000;
  while (!http || !wyoming) {
    if (child.exitCode !== null || performance.now() > deadline)
      throw new Error(`the agent did not start: ${errors.join('\n') || `exit ${child.exitCode}`}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, http: `http://127.0.0.1:${http}`, wyomingPort: wyoming, errors };
}

async function main(): Promise<void> {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-soak-'));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  const broker = await startMosquitto();
  const stoppers: Array<() => Promise<unknown> | unknown> = [() => broker.close()];
  try {
    if (withEngine) await importFixtures(dataDir);
    const daemon = await startDaemon(
      writeConfig(dir, broker.url, withEngine ? testVideo(dir) : undefined),
      dataDir,
    );
    stoppers.unshift(() => daemon.child.kill('SIGKILL'));
    const { readFileSync } = await import('node:fs');
    const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
    const ep: load.Endpoints = {
      http: daemon.http,
      token,
      wyomingPort: daemon.wyomingPort,
      deviceId: DEVICE,
    };
    const operator = await FleetOperator.connect({ url: broker.url });
    stoppers.unshift(() => operator.close());
    const telemetry = watchTelemetry(broker.url);
    stoppers.unshift(() => telemetry.close());
    await soak(daemon, dataDir, ep, operator, broker, telemetry);
  } finally {
    for (const s of stoppers)
      await withDeadline(Promise.resolve(s()), 10_000, 'cleanup').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The agent's own telemetry (heap, handles, timers, outbox depth), as the fleet sees it. */
function watchTelemetry(url: string) {
  const latest: { metrics: Record<string, number>; outboxQueued?: number } = { metrics: {} };
  const client = mqtt.connect(url, { reconnectPeriod: 500 });
  client.on('connect', () => client.subscribe(`mnn-edge/${DEVICE}/telemetry`, { qos: 0 }));
  client.on('message', (_topic, payload) => {
    try {
      const m = JSON.parse(payload.toString()) as {
        metrics?: Record<string, { mean?: number; max?: number }>;
        outbox?: { queued?: number };
      };
      for (const [k, v] of Object.entries(m.metrics ?? {}))
        if (typeof v.max === 'number') latest.metrics[k] = v.max;
      if (typeof m.outbox?.queued === 'number') latest.outboxQueued = m.outbox.queued;
    } catch {
      // not ours to judge here
    }
  });
  client.on('error', () => undefined);
  return { latest, close: () => client.endAsync(true) };
}

async function soak(
  daemon: Daemon,
  dataDir: string,
  ep: load.Endpoints,
  operator: FleetOperator,
  broker: Awaited<ReturnType<typeof startMosquitto>>,
  telemetry: ReturnType<typeof watchTelemetry>,
): Promise<void> {
  const t0 = performance.now();
  const endAt = t0 + MINUTES * 60_000;
  const now = () => performance.now() - t0;
  const reqs: Req[] = [];
  const faults: Fault[] = [];
  const samples: Sample[] = [];
  const running = () => performance.now() < endAt;
  const loop = async (kind: string, pauseMs: number, fn: (n: number) => Promise<void>) => {
    for (let n = 0; running(); n++) {
      const start = now();
      try {
        await withDeadline(fn(n), REQUEST_DEADLINE_MS, kind);
        reqs.push({ kind, start, ms: now() - start, ok: true });
      } catch (err) {
        reqs.push({ kind, start, ms: now() - start, ok: false, error: (err as Error).message.slice(0, 300) });
      }
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  };
  const openai = [load.openaiPlain, load.openaiStream, load.openaiCancelled];
  const kinds = ['openai plain', 'openai stream', 'openai cancelled'];
  const workers = [
    loop('fleet ping', 3000, () => load.fleetPing(operator, ep)),
    loop('wyoming describe', 2000, () => load.wyomingDescribe(ep)),
    loop('dashboard overview', 5000, () => load.overview(ep)),
    ...(withEngine
      ? [
          loop('wyoming turn', 2000, (n) => load.wyomingTurn(ep, n)),
          loop('voice socket turn', 8000, () => load.voiceSocketTurn(ep)),
          ...openai.map((f, i) => loop(kinds[i]!, 1500, () => f(ep))),
        ]
      : []),
    chaos(daemon, operator, broker, faults, now, running),
    sampler(daemon, dataDir, telemetry, samples, reqs, now, running),
  ];
  await Promise.all(workers);
  report({ minutes: MINUTES, reqs, faults, samples, daemonErrors: daemon.errors, withEngine });
}

/** One fault after another: broker restart, hot swap, host kill (the last two only with the engine), as chosen. */
async function chaos(
  daemon: Daemon,
  operator: FleetOperator,
  broker: Awaited<ReturnType<typeof startMosquitto>>,
  faults: Fault[],
  now: () => number,
  running: () => boolean,
): Promise<void> {
  const order = chosenFaults.filter((k) => withEngine || k === 'broker-restart');
  if (order.length === 0) return;
  let version = '1.0.0';
  for (let i = 0; ; i++) {
    const waitUntil = performance.now() + FAULT_EVERY_S * 1000;
    while (running() && performance.now() < waitUntil) await new Promise((r) => setTimeout(r, 250));
    if (!running()) return;
    const kind = order[i % order.length]!;
    const start = now();
    let detail = '';
    if (kind === 'broker-restart') {
      await broker.stop();
      await new Promise((r) => setTimeout(r, 5000));
      await broker.start();
    } else if (kind === 'hot-swap') {
      version = version === '1.0.0' ? '1.0.1' : '1.0.0';
      const [r] = await withDeadline(
        operator.command(
          { deviceId: DEVICE },
          'set-placement',
          { slot: 'voice.llm', pin: { version } },
          600_000,
        ),
        600_000,
        'hot swap',
      ).catch((err: Error) => [undefined, err] as const);
      detail = r?.ok ? `voice.llm → tiny-llm ${version}` : `swap to ${version} failed: ${JSON.stringify(r)}`;
    } else {
      const pids = engineHostPids(daemon.child.pid!);
      const victim = pids[Math.floor(Math.random() * pids.length)];
      if (victim) process.kill(victim, 'SIGKILL');
      detail = victim ? `SIGKILL engine host ${victim} (of ${pids.length})` : 'no engine host running';
    }
    faults.push({ kind, start, end: now(), detail });
  }
}

async function sampler(
  daemon: Daemon,
  dataDir: string,
  telemetry: ReturnType<typeof watchTelemetry>,
  samples: Sample[],
  reqs: Req[],
  now: () => number,
  running: () => boolean,
): Promise<void> {
  let lastProgress = 0;
  while (running()) {
    const agent = procFacts(daemon.child.pid!);
    if (!agent) throw new Error(`the agent exited: ${daemon.errors.slice(-5).join('\n')}`);
    const hosts = engineHostPids(daemon.child.pid!).flatMap((pid) => {
      const f = procFacts(pid);
      return f ? [{ pid, ...f }] : [];
    });
    const m = telemetry.latest.metrics;
    const db = join(dataDir, STORE_FILE);
    samples.push({
      t: now(),
      agent,
      hosts,
      heapBytes: m['agent.heap_used_bytes'],
      handles: m['agent.handles'],
      // Every live timer (the census); a daemon without it reports only the loop-holding ones.
      timers: m['agent.timers_all'] ?? m['agent.timers'],
      outboxQueued: telemetry.latest.outboxQueued,
      dbBytes: fileBytes(db),
      walBytes: fileBytes(`${db}-wal`),
      dataDirBytes: treeBytes(dataDir, ['models']),
    });
    if (now() - lastProgress >= 60_000) {
      lastProgress = now();
      const failed = reqs.filter((r) => !r.ok).length;
      console.log(
        `soak ${(now() / 60_000).toFixed(1)}/${MINUTES} min: ${reqs.length} requests, ${failed} failed, ` +
          `agent ${(agent.rssBytes / 1e6).toFixed(1)} MB RSS, ${agent.fds} fds, ${hosts.length} engine hosts`,
      );
    }
    await new Promise((r) => setTimeout(r, SAMPLE_S * 1000));
  }
}

await main();
process.exit(0);
