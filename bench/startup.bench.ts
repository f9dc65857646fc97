// bench/startup: how soon the built daemon answers after exec, next to a bare node HTTP server started the same
// way in the same run, interleaved round by round. Measured from spawn: the first 200 of GET /healthz (polled)
// and READY=1 on a real NOTIFY_SOCKET (a python3 datagram listener, as PID 1). The agent's own log gives the
// timeline of its start: each module's start (on the path to ready) and what each finishes after ready.
// Same config and node flags (the systemd unit's) as bench/idle: every module, embedded broker, telemetry on,
// no models. The data dir is made by a
// first, untimed start (pairing token, database), as on every boot after the first.
// Targets (issue 18): READY and /healthz ≤ 500 ms after exec, and ≤ 3x the bare server.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startNotifyListener } from '../test/integration/sdnotify-listener.js';
import { agentCli, daemonNodeFlags, ensureBuilt, repoRoot, writeBenchAgentConfig } from './lib/dist.js';
import { bar, check, describe, fmt, summarize } from './lib/stats.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const TARGET_MS = 500;
const TARGET_RATIO = 3;

const BARE_SERVER = `
const s = require('node:http').createServer((q, r) => r.end('ok'));
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ msg: 'listening', port: s.address().port })));
`;

interface Milestone {
  what: string;
  atMs: number;
}

interface Run {
  healthzMs: number;
  readyMs: number;
  /** The agent's own timeline (ms since its process began), from its log. */
  timeline: Milestone[];
}

function get(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 200 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** Polls until the path answers 200; the port comes from the child's `listening` log line. */
async function firstAnswer(port: () => number | undefined, path: string, t0: number): Promise<number> {
  for (;;) {
    const p = port();
    if (p !== undefined && (await get(p, path)) === 200) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function startOnce(
  args: string[],
  env: NodeJS.ProcessEnv,
  path: string,
  ready?: () => Promise<unknown>,
): Promise<{ run: Run; child: ChildProcess }> {
  const timeline: Milestone[] = [];
  let port: number | undefined;
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'inherit'] });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if ((m['msg'] === 'serving' || m['msg'] === 'listening') && typeof m['port'] === 'number')
      port = m['port'];
    const at = m['atMs'];
    if (typeof at === 'number') {
      const what = m['module'] ? `${m['module']}: ${String(m['msg'])}` : String(m['msg']);
      timeline.push({ what, atMs: at });
    }
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited early with ${code}`))),
  );
  const healthzMs = await Promise.race([firstAnswer(() => port, path, t0), exited]);
  const readyMs = ready
    ? await Promise.race([ready().then(() => performance.now() - t0), exited])
    : healthzMs;
  // What finishes after ready (broker, discovery, probes) has a moment to log before the process goes.
  await new Promise((r) => setTimeout(r, 1500));
  exited.catch(() => {});
  return { run: { healthzMs, readyMs, timeline }, child };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await gone;
}

async function main(): Promise<void> {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-startup-'));
  const configPath = writeBenchAgentConfig(dir);
  // As the systemd unit starts it: its node flags, then the bundled CLI.
  const agentArgs = [
    ...daemonNodeFlags(),
    agentCli,
    'run',
    '--config',
    configPath,
    '--data-dir',
    join(dir, 'data'),
  ];
  const agent: Run[] = [];
  const bare: Run[] = [];
  try {
    // Untimed first start: creates the data dir, the pairing token and the database.
    const first = await startOnce(agentArgs, process.env, '/healthz');
    await stop(first.child);
    for (let round = 0; round < ROUNDS; round++) {
      const listener = await startNotifyListener(join(dir, `notify-${round}.sock`));
      try {
        const env = { ...process.env, NOTIFY_SOCKET: listener.path };
        const a = await startOnce(agentArgs, env, '/healthz', () => listener.waitFor('READY=1', 30_000));
        await stop(a.child);
        agent.push(a.run);
      } finally {
        await listener.close();
      }
      const b = await startOnce(['-e', BARE_SERVER], process.env, '/');
      await stop(b.child);
      bare.push(b.run);
      process.stdout.write(`round ${round + 1}/${ROUNDS} done\n`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const h = summarize(agent.map((r) => r.healthzMs));
  const r = summarize(agent.map((x) => x.readyMs));
  const b = summarize(bare.map((x) => x.healthzMs));
  console.log(`\nexec → first answer, ${ROUNDS} rounds (median, min..max):`);
  console.log(`  bare node HTTP server   ${describe(b, 'ms', 1)}`);
  console.log(`  mnn-edge run /healthz   ${describe(h, 'ms', 1)}`);
  console.log(`  mnn-edge run READY=1    ${describe(r, 'ms', 1)}`);

  // The timeline of the median round by /healthz: what ran before ready and what finished after it.
  const order = [...agent].sort((x, y) => x.healthzMs - y.healthzMs);
  const median = order[Math.floor(order.length / 2)]!;
  console.log('\nagent timeline (median round; ms since the agent process began, from its log):');
  const scale = Math.max(...median.timeline.map((m) => m.atMs), 1);
  for (const m of median.timeline)
    console.log(bar(m.what.slice(0, 28), m.atMs, scale, `${fmt(m.atMs, 0)} ms`));

  const worst = Math.max(h.median, r.median);
  const ratio = worst / b.median;
  const scaleMs = Math.max(worst, TARGET_MS);
  console.log('');
  console.log(bar('bare node', b.median, scaleMs, `${fmt(b.median, 0)} ms`));
  console.log(bar('mnn-edge /healthz', h.median, scaleMs, `${fmt(h.median, 0)} ms`));
  console.log(bar('mnn-edge READY=1', r.median, scaleMs, `${fmt(r.median, 0)} ms`));
  const v1 = check('exec → /healthz and READY', worst, 'ms', `≤ ${TARGET_MS}`, worst <= TARGET_MS);
  console.log(`target ready ≤ ${TARGET_MS} ms: ${fmt(worst, 0)} ms ${v1}`);
  const v2 = check('ready vs bare node server', ratio, 'x', `≤ ${TARGET_RATIO}`, ratio <= TARGET_RATIO);
  console.log(`target ≤ ${TARGET_RATIO}x bare node: ${fmt(ratio, 2)}x ${v2}`);
}

await main();
