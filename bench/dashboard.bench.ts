// bench/dashboard: what a page load costs the board. The agent serves the built dashboard from memory,
// pre-gzipped; the baseline, measured in the same run, is a plain node:http server reading the same files
// from disk on every request and sending them uncompressed (what a naive static server does). Measured:
// median time for one full page load (index.html + app.js + app.css + the worklet, sequential, keep-alive)
// and the bytes on the wire. Targets: time ≤ 1.0× the baseline, bytes ≤ 0.5× the baseline.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, get, Agent as HttpAgent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { defaultConfig } from '../agent/config/defaults.js';
import { createDashboardModule } from '../agent/dashboard-api/routes.js';
import { createAgent } from '../agent/main.js';
import { createMemoryLogger } from '../lib/log.js';
import { bar, check, describe, fmt, summarize } from './lib/stats.js';

const LOADS = Number(process.env['BENCH_DASHBOARD_LOADS'] ?? 300);
const repo = join(import.meta.dirname, '..');
const dist = join(repo, 'dashboard', 'dist');
const FILES = ['', 'assets/app.js', 'assets/app.css', 'assets/capture-worklet.js'];

execFileSync(process.execPath, [join(repo, 'dashboard', 'build.mjs')], { stdio: 'ignore' });

function fetchOnce(agent: HttpAgent, base: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(`${base}/${path}`, { agent, headers: { 'accept-encoding': 'gzip' } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      res.on('end', () =>
        res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${path}: ${res.statusCode}`)),
      );
    }).on('error', reject);
  });
}

async function measure(base: string): Promise<{ ms: number[]; bytes: number }> {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  const ms: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 20; i++) for (const f of FILES) await fetchOnce(agent, base, f); // warm up
  for (let i = 0; i < LOADS; i++) {
    const t0 = performance.now();
    bytes = 0;
    for (const f of FILES) bytes += await fetchOnce(agent, base, f);
    ms.push(performance.now() - t0);
  }
  agent.destroy();
  return { ms, bytes };
}

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
const baseline = createServer((req, res) => {
  const path = req.url === '/' ? 'index.html' : (req.url ?? '').slice(1);
  try {
    const body = readFileSync(join(dist, path));
    res.writeHead(200, {
      'Content-Type': TYPES[extname(path)] ?? 'application/octet-stream',
      'Content-Length': body.length,
    });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise<void>((r) => baseline.listen(0, '127.0.0.1', r));
const baselineUrl = `http://127.0.0.1:${(baseline.address() as AddressInfo).port}`;

const dataDir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-dash-'));
const config = defaultConfig({});
const agent = createAgent(
  { ...config, dataDir, root: dataDir, http: { ...config.http, bind: '127.0.0.1', port: 0 } },
  {
    logger: createMemoryLogger(),
    modules: [
      createDashboardModule({
        version: 'bench',
        distDir: dist,
        sources: { capabilities: () => undefined, engine: () => ({ available: false, reason: 'bench' }) },
      }),
    ],
  },
);
await agent.start();
const agentUrl = `http://127.0.0.1:${agent.http.port}`;

try {
  const base = await measure(baselineUrl);
  const ours = await measure(agentUrl);
  const b = summarize(base.ms);
  const o = summarize(ours.ms);
  const timeRatio = o.median / b.median;
  const bytesRatio = ours.bytes / base.bytes;
  console.log(`page load, ${FILES.length} requests, ${LOADS} loads each`);
  console.log(`  baseline (disk, uncompressed): ${describe(b, 'ms', 3)}, ${base.bytes} B`);
  console.log(`  agent (memory, gzip):          ${describe(o, 'ms', 3)}, ${ours.bytes} B`);
  const max = Math.max(1, timeRatio, bytesRatio);
  console.log(bar('baseline', 1, max, '1.00x'));
  console.log(
    bar(
      'agent time',
      timeRatio,
      max,
      `${fmt(timeRatio)}x  ${check('page load time vs disk', timeRatio, 'x', '≤ 1.0', timeRatio <= 1.0)} (target ≤ 1.0x)`,
    ),
  );
  console.log(
    bar(
      'agent bytes',
      bytesRatio,
      max,
      `${fmt(bytesRatio)}x  ${check('page bytes vs uncompressed', bytesRatio, 'x', '≤ 0.5', bytesRatio <= 0.5)} (target ≤ 0.5x)`,
    ),
  );
} finally {
  await agent.stop('bench done');
  baseline.close();
  rmSync(dataDir, { recursive: true, force: true });
}
