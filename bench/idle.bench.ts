// bench/idle: what the agent costs a board when nothing happens. The process tree without engine hosts
// (the fleet agent with its embedded broker and telemetry on, default intervals) runs idle for 60 s next to a
// bare `node -e` process over the same window; RSS and CPU (% of one core) are read from /proc.
// Targets: ≤ 80 MB RSS, ≤ 1 % CPU. BENCH_IDLE_SECONDS shortens the window for a quick look.
//
// Run from sources the agent is loaded through tsx, whose compiler adds memory a built agent does not carry;
// a `node --import=tsx` idle process is measured too, and its excess over bare node is reported as loader cost.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bar, fmt, summarize, verdict } from './stats.js';

const TICKS = 100; // USER_HZ on Linux

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

async function startChild(args: string[], readyLine: boolean): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  if (readyLine) {
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`child exited early with ${code}`)));
      child.stdout!.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) resolve();
      });
    });
  } else {
    await new Promise((r) => setTimeout(r, 1000));
  }
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
  const dataDir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-idle-'));
  const self = new URL(import.meta.url).pathname;
  const children: ChildProcess[] = [];
  try {
    children.push(await startChild(['--import=tsx', self, '--agent', dataDir], true));
    children.push(await startChild(['-e', 'setInterval(() => {}, 1 << 30)'], false));
    children.push(await startChild(['--import=tsx', '-e', 'setInterval(() => {}, 1 << 30)'], false));
    // Let start-up work (first samples, discovery, JIT) settle before the window opens.
    await new Promise((r) => setTimeout(r, 3000));
    const [agent, bare, loader] = await measure(children, seconds);
    const loaderMb = loader!.rssMb.median - bare!.rssMb.median;
    const agentNet = agent!.rssMb.median - Math.max(0, loaderMb);
    console.log(
      `${seconds} s idle; agent = fleet agent + embedded aedes broker + telemetry (default intervals)`,
    );
    console.log(`process tree pids: agent ${treePids(children[0]!.pid!).length}, baseline 1`);
    const scale = Math.max(agent!.rssMb.max, 80);
    console.log(bar('bare node -e (RSS)', bare!.rssMb.median, scale, `${fmt(bare!.rssMb.median, 1)} MB`));
    console.log(
      bar('node --import=tsx (RSS)', loader!.rssMb.median, scale, `${fmt(loader!.rssMb.median, 1)} MB`),
    );
    console.log(
      bar(
        'agent via tsx (RSS)',
        agent!.rssMb.median,
        scale,
        `${fmt(agent!.rssMb.median, 1)} MB (max ${fmt(agent!.rssMb.max, 1)})`,
      ),
    );
    console.log(
      bar(
        'agent minus tsx loader',
        agentNet,
        scale,
        `${fmt(agentNet, 1)} MB  ${fmt(agentNet / bare!.rssMb.median)}x bare node`,
      ),
    );
    const cpuScale = Math.max(1, agent!.cpuPct);
    console.log(bar('bare node -e (CPU)', bare!.cpuPct, cpuScale, `${fmt(bare!.cpuPct, 2)} % of one core`));
    console.log(bar('agent (CPU)', agent!.cpuPct, cpuScale, `${fmt(agent!.cpuPct, 2)} % of one core`));
    console.log(
      `RSS target ≤ 80 MB (without the tsx loader): ${verdict(agentNet <= 80)} (${fmt(agentNet, 1)} MB)`,
    );
    console.log(`CPU target ≤ 1 %: ${verdict(agent!.cpuPct <= 1)} (${fmt(agent!.cpuPct, 2)} %)`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function runAgentChild(): Promise<void> {
  // Child: the agent's fleet side as `mnn-edge run` would compose it, minus engine hosts.
  const { systemClock } = await import('../agent/common/clock.js');
  const { createLogger } = await import('../agent/common/log.js');
  const { openStore } = await import('../agent/store/database.js');
  const { createFleetAgent } = await import('../agent/fleet/agent.js');
  const dataDir = process.argv[3]!;
  const agent = createFleetAgent({
    config: {
      mqtt: { protocolVersion: 5, embeddedBroker: { enabled: true, port: 0, host: '127.0.0.1' } },
      root: '/',
      dataDir,
    },
    db: openStore(join(dataDir, 'agent.db')),
    logger: createLogger({ level: 'warn' }),
    deviceId: 'idle-bench',
    tags: [],
    board: () => ({ family: 'bench' }),
    clock: systemClock,
    agentVersion: 'bench',
  });
  await agent.start();
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => void agent.stop().then(() => process.exit(0)));
}

// Dispatch last: the helpers above must be initialised before either side runs.
if (process.argv[2] === '--agent') await runAgentChild();
else await main();
