// bench/metrics: what GET /metrics costs. Two parts.
//
// 1. Response time and size with 8 slots: the agent's core (HTTP server, auth) with the real metrics module, its
//    snapshot that of a busy board with 8 slot entries (every slot, one of them served by two instances), their
//    request and error counts, TTFT and decode histograms, 8 engine hosts, the outbox, MQTT, OTA jobs and four
//    thermal zones. Scraped with the API token over keep-alive, interleaved with GET /healthz on the same server
//    (the baseline: the same HTTP path answering a small JSON document).
// 2. Idle CPU with a Prometheus-style scrape every 15 s against none: two built daemons (`mnn-edge run` from
//    dist/, every module, embedded broker, telemetry on, no models) idle side by side over the same window, one
//    scraped every 15 s. Then 200 scrapes back to back give the CPU one scrape costs the daemon, which says what a
//    15 s scrape adds without the noise of a mostly idle window.
// BENCH_METRICS_SECONDS sets the idle window (default 120 s: 8 scrapes).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../agent/config/defaults.js';
import { createAgent } from '../agent/main.js';
import { HOST_STATES, type MetricsSnapshot } from '../agent/metrics/collect.js';
import { createMetricsModule } from '../agent/metrics/module.js';
import { SLOT_NAMES } from '../agent/plan/types.js';
import { DECODE_TPS_BUCKETS, TTFT_BUCKETS_S } from '../agent/runtime/serving/serving.js';
import { Histogram } from '../lib/histogram.js';
import { createMemoryLogger } from '../lib/log.js';
import { agentCli, daemonNodeFlags, ensureBuilt, repoRoot, writeBenchAgentConfig } from './lib/dist.js';
import { cpuTicks, sumOver, TICKS, treePids } from './lib/proc.js';
import { bar, check, fmt, summarize } from './lib/stats.js';

function hist(bounds: number[], n: number, scale: number) {
  const h = new Histogram(bounds);
  for (let i = 0; i < n; i++) h.observe((((i * 7919) % 100) / 100) * scale);
  return h.snapshot();
}

/** 8 slot entries: every slot, and voice.llm also on a second instance (a hot swap in progress). */
function eightSlots(): MetricsSnapshot {
  const names = [...SLOT_NAMES, 'voice.llm'];
  return {
    version: '0.1.0',
    slots: names.map((slot, i) => ({
      slot,
      model: `model-${i}@1.0.0`,
      backend: i % 2 ? 'opencl' : 'cpu',
      requests: 100 * i,
    })),
    distributions: SLOT_NAMES.map((slot, i) => ({
      slot,
      requests: 100 * i,
      errorsByReason: { backend: i, cancelled: 2 * i, timeout: 1 },
      ttft: hist(TTFT_BUCKETS_S, 100 * i, 3),
      decodeTps: hist(DECODE_TPS_BUCKETS, 100 * i, 60),
    })),
    queueDepths: Object.fromEntries(SLOT_NAMES.map((s, i) => [s, i % 3])),
    hosts: names.map((_s, i) => ({
      key: `model-${i}@1.0.0/int4|${i % 2 ? 'opencl' : 'cpu'}`,
      modelId: `model-${i}`,
      status: HOST_STATES[i % HOST_STATES.length]!,
      rssBytes: (200 + 50 * i) * 1024 * 1024,
      load: { ms: 800 + 100 * i },
    })),
    counters: { fallbacks: 2, swaps: 5, reconnects: 1 },
    outbox: {
      queued: 3,
      queuedBytes: 4096,
      pending: 1,
      dropped: { expired: 0, overflow: 0, diskFull: 0 },
      degraded: false,
      nextSeq: 1234,
    },
    mqtt: { connected: true },
    otaJobs: { committed: 3, 'rolled-back': 1 },
    telemetry: {
      'cpu.load_pct': { min: 1, mean: 12.5, max: 30, n: 6 },
      'mem.used_bytes': { min: 1, mean: 2e9, max: 3e9, n: 6 },
      'mem.available_bytes': { min: 1, mean: 6e9, max: 7e9, n: 6 },
      ...Object.fromEntries(
        ['soc', 'cpu-big', 'cpu-little', 'npu'].map((z) => [
          `temp.${z}_c`,
          { min: 40, mean: 45, max: 50, n: 6 },
        ]),
      ),
    },
    settingsRevision: 7,
  };
}

async function timed(url: string, token: string): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
  return { ms: performance.now() - t0, bytes: body.length };
}

async function responseTimeAndSize(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-metrics-'));
  const base = defaultConfig({});
  const snapshot = eightSlots();
  const agent = createAgent(
    { ...base, dataDir, http: { ...base.http, bind: '127.0.0.1', port: 0 } },
    {
      logger: createMemoryLogger(),
      modules: [createMetricsModule({ snapshot: () => snapshot, watch: () => [] })],
    },
  );
  await agent.start();
  try {
    const url = `http://127.0.0.1:${agent.http.port}`;
    const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
    for (let i = 0; i < 50; i++) {
      await timed(`${url}/metrics`, token);
      await timed(`${url}/healthz`, token);
    }
    const metrics: number[] = [];
    const health: number[] = [];
    let bytes = 0;
    let text = '';
    for (let i = 0; i < 500; i++) {
      const m = await timed(`${url}/metrics`, token);
      metrics.push(m.ms);
      bytes = m.bytes;
      health.push((await timed(`${url}/healthz`, token)).ms);
    }
    text = await (await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${token}` } })).text();
    const series = text.split('\n').filter((l) => l && !l.startsWith('#')).length;
    const m = summarize(metrics);
    const h = summarize(health);
    console.log(
      `GET /metrics with 8 slots: ${fmt(bytes / 1024, 1)} KiB, ${series} series; 500 requests each, interleaved`,
    );
    const scale = Math.max(m.p90, h.p90);
    console.log(
      bar('GET /healthz (baseline)', h.median, scale, `${fmt(h.median, 2)} ms (p90 ${fmt(h.p90, 2)})`),
    );
    console.log(
      bar(
        'GET /metrics (8 slots)',
        m.median,
        scale,
        `${fmt(m.median, 2)} ms (p90 ${fmt(m.p90, 2)}), ${fmt(m.median / h.median)}x /healthz`,
      ),
    );
    console.log(
      `response time median ≤ 10 ms: ${check('/metrics median, 8 slots', m.median, 'ms', '≤ 10', m.median <= 10)}`,
    );
    console.log(
      `response p90 (${fmt(m.p90, 2)} ms): ${check('/metrics p90, 8 slots', m.p90, 'ms', '≤ 25', m.p90 <= 25)}`,
    );
    console.log(
      `size ≤ 64 KiB: ${check('/metrics size, 8 slots', bytes / 1024, 'KiB', '≤ 64', bytes <= 64 * 1024)}`,
    );
  } finally {
    await agent.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** `mnn-edge run` from dist/ with the unit's node flags; resolves with its HTTP port once it listens. */
async function startDaemon(
  configPath: string,
  dataDir: string,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [...daemonNodeFlags(), agentCli, 'run', '--config', configPath, '--data-dir', dataDir],
    {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`agent exited early with ${code}`)));
    let seen = '';
    const onData = (d: Buffer) => {
      seen += d.toString();
      const m = /"msg":"listening".*?"port":(\d+)/.exec(seen);
      if (m) {
        child.stdout!.off('data', onData);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
  });
  child.stdout!.resume();
  return { child, port };
}

const treeTicks = (c: ChildProcess) => sumOver(treePids(c.pid!), cpuTicks);

async function idleWithScrapes(): Promise<void> {
  const seconds = Number(process.env['BENCH_METRICS_SECONDS'] ?? 120);
  const intervalS = 15;
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-metrics-idle-'));
  const configPath = writeBenchAgentConfig(dir);
  const daemons: ChildProcess[] = [];
  try {
    const scraped = await startDaemon(configPath, join(dir, 'scraped'));
    daemons.push(scraped.child);
    const quiet = await startDaemon(configPath, join(dir, 'quiet'));
    daemons.push(quiet.child);
    const token = readFileSync(join(dir, 'scraped', 'pairing-token'), 'utf8').trim();
    const url = `http://127.0.0.1:${scraped.port}/metrics`;
    await new Promise((r) => setTimeout(r, 5000)); // start-up work (first samples, discovery, JIT) settles
    const t0 = performance.now();
    const before = [treeTicks(scraped.child), treeTicks(quiet.child)];
    let scrapes = 0;
    let bytes = 0;
    while (performance.now() - t0 < seconds * 1000) {
      bytes = (await timed(url, token)).bytes;
      scrapes++;
      const next = t0 + scrapes * intervalS * 1000;
      await new Promise((r) =>
        setTimeout(r, Math.max(0, Math.min(next, t0 + seconds * 1000) - performance.now())),
      );
    }
    const elapsed = (performance.now() - t0) / 1000;
    const pct = (ticks: number) => (ticks / TICKS / elapsed) * 100;
    const scrapedPct = pct(treeTicks(scraped.child) - before[0]!);
    const quietPct = pct(treeTicks(quiet.child) - before[1]!);
    console.log(
      `\n${fmt(elapsed, 0)} s idle, two daemons side by side; one scraped every ${intervalS} s (${scrapes} scrapes of ${fmt(bytes / 1024, 1)} KiB)`,
    );
    const scale = Math.max(scrapedPct, quietPct, 0.5);
    console.log(bar('not scraped (CPU)', quietPct, scale, `${fmt(quietPct, 3)} % of one core`));
    console.log(
      bar(
        `scraped every ${intervalS} s (CPU)`,
        scrapedPct,
        scale,
        `${fmt(scrapedPct, 3)} % of one core, ${fmt(scrapedPct / quietPct)}x`,
      ),
    );
    const ratio = scrapedPct / quietPct;
    console.log(
      `idle CPU scraped / not scraped ≤ 1.25x: ${check('idle CPU, 15 s scrape vs none', ratio, 'x', '≤ 1.25', ratio <= 1.25)}`,
    );

    // What one scrape costs the daemon, from a burst (the window above holds too few to see through the noise).
    const burst = 200;
    const b0 = treeTicks(scraped.child);
    const w0 = performance.now();
    for (let i = 0; i < burst; i++) await timed(url, token);
    const wall = performance.now() - w0;
    const perScrapeMs = ((treeTicks(scraped.child) - b0) / TICKS / burst) * 1000;
    const addedPct = (perScrapeMs / 1000 / intervalS) * 100;
    console.log(
      `one scrape of the idle daemon: ${fmt(perScrapeMs, 2)} ms CPU (${fmt(wall / burst, 2)} ms wall, ${burst} back to back)`,
    );
    console.log(
      `so a ${intervalS} s scrape adds ${fmt(addedPct, 4)} % of one core: ${check('CPU added by a 15 s scrape', addedPct, '%', '≤ 0.05', addedPct <= 0.05)}`,
    );
  } finally {
    for (const c of daemons) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    rmSync(dir, { recursive: true, force: true });
  }
}

await responseTimeAndSize();
await idleWithScrapes();
