// bench/idle: what the agent costs a board when nothing happens. The built daemon (`mnn-edge run` from dist/,
// every module composed: detection, model store, runtime with no slots placed, fleet with its embedded broker and
// telemetry on at default intervals, dashboard, workloads) runs idle next to a bare `node -e` process over the
// same window; RSS and CPU (% of one core) of each process tree are read from /proc. No engine hosts run.
// Targets: ≤ 80 MB RSS, ≤ 1 % CPU. BENCH_IDLE_SECONDS shortens the 60 s window for a quick look.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bar, fmt, summarize, verdict } from './stats.js';

const TICKS = 100; // USER_HZ on Linux
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

function treePids(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = parents.get(ppid) ?? [];
      list.push(Number(e));
      parents.set(ppid, list);
    } catch {
      // exited while we looked
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(parents.get(out[i]!) ?? []));
  return out;
}

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

interface Measured {
  cpuPct: number;
  rssMb: { median: number; max: number };
}

function sum(pids: number[], f: (pid: number) => number): number {
  let total = 0;
  for (const p of pids) {
    try {
      total += f(p);
    } catch {
      // gone
    }
  }
  return total;
}

async function startChild(args: string[], readyText: string | undefined): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  if (readyText) {
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`child exited early with ${code}`)));
      let seen = '';
      child.stdout!.on('data', (d: Buffer) => {
        seen += d.toString();
        if (seen.includes(readyText)) resolve();
      });
    });
  } else {
    await new Promise((r) => setTimeout(r, 1000));
  }
  // Keep draining the agent's log so a full pipe never blocks it.
  child.stdout!.resume();
  return child;
}

async function measure(children: ChildProcess[], seconds: number): Promise<Measured[]> {
  const pids = children.map((c) => treePids(c.pid!));
  const start = pids.map((p) => sum(p, cpuTicks));
  const rss: number[][] = children.map(() => []);
  const t0 = performance.now();
  for (let s = 0; s < seconds; s++) {
    await new Promise((r) => setTimeout(r, 1000));
    for (const [i, c] of children.entries()) rss[i]!.push(sum(treePids(c.pid!), rssBytes) / 1e6);
  }
  const elapsedSec = (performance.now() - t0) / 1000;
  return children.map((c, i) => {
    const ticks = sum(treePids(c.pid!), cpuTicks) - start[i]!;
    const r = summarize(rss[i]!);
    return { cpuPct: (ticks / TICKS / elapsedSec) * 100, rssMb: { median: r.median, max: r.max } };
  });
}

async function main(): Promise<void> {
  const seconds = Number(process.env['BENCH_IDLE_SECONDS'] ?? 60);
  console.log('building dist/ (npm run build) so the agent runs as it ships, without the TypeScript loader');
  const build = spawnSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
  if (build.status !== 0) throw new Error(`npm run build failed with ${build.status}`);
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-idle-'));
  const configPath = join(dir, 'agent.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      http: { bind: '127.0.0.1', port: 0 },
      mqtt: { embeddedBroker: { enabled: true, port: 0, host: '127.0.0.1' } },
    }),
  );
  const children: ChildProcess[] = [];
  try {
    const cli = join(repoRoot, 'dist', 'agent', 'cli', 'mnn-edge.js');
    children.push(
      await startChild([cli, 'run', '--config', configPath, '--data-dir', join(dir, 'data')], '"listening"'),
    );
    children.push(await startChild(['-e', 'setInterval(() => {}, 1 << 30)'], undefined));
    // Let start-up work (first samples, discovery, JIT) settle before the window opens.
    await new Promise((r) => setTimeout(r, 3000));
    const [agent, bare] = await measure(children, seconds);
    console.log(
      `${seconds} s idle; agent = mnn-edge run (all modules, embedded broker, telemetry on, no models)`,
    );
    console.log(`process tree pids: agent ${treePids(children[0]!.pid!).length}, baseline 1`);
    const scale = Math.max(agent!.rssMb.max, 80);
    console.log(bar('bare node -e (RSS)', bare!.rssMb.median, scale, `${fmt(bare!.rssMb.median, 1)} MB`));
    console.log(
      bar(
        'mnn-edge run (RSS)',
        agent!.rssMb.median,
        scale,
        `${fmt(agent!.rssMb.median, 1)} MB (max ${fmt(agent!.rssMb.max, 1)}), ${fmt(agent!.rssMb.median / bare!.rssMb.median)}x bare node`,
      ),
    );
    const cpuScale = Math.max(1, agent!.cpuPct);
    console.log(bar('bare node -e (CPU)', bare!.cpuPct, cpuScale, `${fmt(bare!.cpuPct, 2)} % of one core`));
    console.log(bar('mnn-edge run (CPU)', agent!.cpuPct, cpuScale, `${fmt(agent!.cpuPct, 2)} % of one core`));
    console.log(
      `RSS target ≤ 80 MB: ${verdict(agent!.rssMb.median <= 80)} (${fmt(agent!.rssMb.median, 1)} MB)`,
    );
    console.log(`CPU target ≤ 1 %: ${verdict(agent!.cpuPct <= 1)} (${fmt(agent!.cpuPct, 2)} %)`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
