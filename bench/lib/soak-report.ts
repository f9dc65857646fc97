// The soak benchmark's report: requests done and failed by cause (a failure is put down to an injected fault
// only when the request overlapped that fault's window and the fault can break that kind of request), p50/p99
// latency per kind over time, and the slope of every sampled figure after warm-up, each with a one-line chart.
import { quantile, slope, sparkline } from './soak-probe.js';
import { check, fmt } from './stats.js';

export interface Req {
  kind: string;
  /** ms since the soak started */
  start: number;
  ms: number;
  ok: boolean;
  error?: string;
}

export interface Fault {
  kind: 'broker-restart' | 'hot-swap' | 'host-kill';
  start: number;
  end: number;
  detail: string;
}

export interface Sample {
  t: number;
  agent: { rssBytes: number; fds: number; threads: number };
  hosts: Array<{ pid: number; rssBytes: number; fds: number; threads: number }>;
  heapBytes: number | undefined;
  handles: number | undefined;
  timers: number | undefined;
  outboxQueued: number | undefined;
  dbBytes: number;
  walBytes: number;
  dataDirBytes: number;
}

/** How long after a fault a request may still fail because of it (reconnect backoff, a host's reload). */
const GRACE_MS: Record<Fault['kind'], number> = {
  'broker-restart': 30_000,
  'hot-swap': 15_000,
  'host-kill': 60_000,
};
const ENGINE_KINDS = /wyoming turn|voice socket|openai/;

function causeOf(r: Req, faults: readonly Fault[]): string {
  for (const f of faults) {
    const overlaps = r.start <= f.end + GRACE_MS[f.kind] && r.start + r.ms >= f.start;
    if (!overlaps) continue;
    if (f.kind === 'broker-restart' && r.kind === 'fleet ping') return f.kind;
    if (f.kind !== 'broker-restart' && ENGINE_KINDS.test(r.kind)) return f.kind;
  }
  return 'unexplained';
}

function requestsTable(reqs: readonly Req[], faults: readonly Fault[]): number {
  const kinds = [...new Set(reqs.map((r) => r.kind))];
  let unexplained = 0;
  console.log('\nrequests by kind (latency ms over the whole run)');
  console.log('  kind                  done  failed  by cause                          p50      p99');
  for (const k of kinds) {
    const of = reqs.filter((r) => r.kind === k);
    const failed = of.filter((r) => !r.ok);
    const causes = new Map<string, number>();
    for (const r of failed) {
      const c = causeOf(r, faults);
      causes.set(c, (causes.get(c) ?? 0) + 1);
    }
    unexplained += causes.get('unexplained') ?? 0;
    const ms = of.filter((r) => r.ok).map((r) => r.ms);
    const byCause = [...causes].map(([c, n]) => `${c} ${n}`).join(', ') || '-';
    console.log(
      `  ${k.padEnd(20)} ${String(of.length - failed.length).padStart(5)}  ${String(failed.length).padStart(6)}  ${byCause.padEnd(32)} ${fmt(quantile(ms, 0.5), 0).padStart(6)}  ${fmt(quantile(ms, 0.99), 0).padStart(7)}`,
    );
  }
  const shown = reqs.filter((r) => !r.ok && causeOf(r, faults) === 'unexplained').slice(0, 8);
  for (const r of shown)
    console.log(`  unexplained: ${r.kind} at ${fmt(r.start / 60_000, 1)} min: ${r.error}`);
  return unexplained;
}

function latencyOverTime(reqs: readonly Req[], minutes: number): void {
  const buckets = 10;
  const width = (minutes * 60_000) / buckets;
  console.log(
    `\np50 / p99 latency per kind over time (ms, ${buckets} slices of ${fmt(width / 60_000, 1)} min)`,
  );
  for (const k of [...new Set(reqs.map((r) => r.kind))]) {
    const cells: string[] = [];
    const p99s: number[] = [];
    for (let b = 0; b < buckets; b++) {
      const ms = reqs
        .filter((r) => r.kind === k && r.ok && r.start >= b * width && r.start < (b + 1) * width)
        .map((r) => r.ms);
      p99s.push(quantile(ms, 0.99));
      cells.push(`${fmt(quantile(ms, 0.5), 0)}/${fmt(quantile(ms, 0.99), 0)}`);
    }
    console.log(`  ${k.padEnd(20)} p99 ${sparkline(p99s, buckets)}  ${cells.join(' ')}`);
  }
}

interface Series {
  name: string;
  unit: string;
  /** value per hour of slope → shown in this unit */
  scale: number;
  points: Array<[number, number]>;
}

function seriesOf(samples: readonly Sample[]): Series[] {
  const h = (s: Sample) => s.t / 3_600_000;
  const pick = (name: string, unit: string, scale: number, f: (s: Sample) => number | undefined): Series => ({
    name,
    unit,
    scale,
    points: samples.flatMap((s) => {
      const v = f(s);
      return v === undefined || !Number.isFinite(v) ? [] : [[h(s), v] as [number, number]];
    }),
  });
  return [
    pick('agent RSS', 'MB', 1e6, (s) => s.agent.rssBytes),
    pick('agent heap used', 'MB', 1e6, (s) => s.heapBytes),
    pick('agent descriptors', '', 1, (s) => s.agent.fds),
    pick('agent threads', '', 1, (s) => s.agent.threads),
    pick('agent handles', '', 1, (s) => s.handles),
    pick('agent timers', '', 1, (s) => s.timers),
    pick('engine hosts RSS (sum)', 'MB', 1e6, (s) => s.hosts.reduce((a, x) => a + x.rssBytes, 0)),
    pick('engine hosts descriptors', '', 1, (s) => s.hosts.reduce((a, x) => a + x.fds, 0)),
    pick('engine hosts threads', '', 1, (s) => s.hosts.reduce((a, x) => a + x.threads, 0)),
    pick('outbox depth', 'msgs', 1, (s) => s.outboxQueued),
    pick('agent.db', 'MB', 1e6, (s) => s.dbBytes),
    pick('agent.db-wal', 'MB', 1e6, (s) => s.walBytes),
    pick('data dir (no models)', 'MB', 1e6, (s) => s.dataDirBytes),
  ];
}

/** Median of the first and last fifth after warm-up: growth that a slope through noise could hide or invent. */
function ends(points: ReadonlyArray<readonly [number, number]>): { first: number; last: number } {
  const n = Math.max(1, Math.floor(points.length / 5));
  return {
    first: quantile(
      points.slice(0, n).map((p) => p[1]),
      0.5,
    ),
    last: quantile(
      points.slice(-n).map((p) => p[1]),
      0.5,
    ),
  };
}

interface HostLife {
  pid: number;
  /** hours sampled after warm-up */
  hours: number;
  firstMb: number;
  lastMb: number;
  slopeH: number;
}

/** A host's RSS slope means something only over a life longer than its own warm-up (KV caches, contexts). */
const LONG_LIFE_H = 0.5;

/** Each engine host's RSS within its own life (hosts are killed and swapped during the soak). */
function hostLives(samples: readonly Sample[], warmH: number): HostLife[] {
  const byPid = new Map<number, Array<[number, number]>>();
  for (const s of samples)
    for (const x of s.hosts) {
      if (s.t / 3_600_000 < warmH) continue;
      const list = byPid.get(x.pid) ?? [];
      list.push([s.t / 3_600_000, x.rssBytes / 1e6]);
      byPid.set(x.pid, list);
    }
  return [...byPid.entries()]
    .filter(([, p]) => p.length >= 8)
    .map(([pid, p]) => {
      const kept = p.slice(3);
      const e = ends(kept);
      return {
        pid,
        hours: kept[kept.length - 1]![0] - kept[0]![0],
        firstMb: e.first,
        lastMb: e.last,
        slopeH: slope(kept),
      };
    });
}

export function report(o: {
  minutes: number;
  reqs: Req[];
  faults: Fault[];
  samples: Sample[];
  daemonErrors: string[];
  withEngine: boolean;
}): void {
  const warmMin = Math.min(10, o.minutes * 0.2);
  const warmH = warmMin / 60;
  console.log(
    `\nsoak: ${o.minutes} min${o.withEngine ? ' with the engine' : ' without the engine (agent-side load only)'}, ` +
      `${o.samples.length} samples, slopes after ${fmt(warmMin, 1)} min of warm-up`,
  );
  console.log(`faults injected (${o.faults.length}):`);
  for (const f of o.faults)
    console.log(`  ${fmt(f.start / 60_000, 1).padStart(5)} min  ${f.kind.padEnd(15)} ${f.detail}`);
  const unexplained = requestsTable(o.reqs, o.faults);
  latencyOverTime(o.reqs, o.minutes);
  console.log('\nslopes after warm-up (chart: the whole run, min … max)');
  const results = new Map<string, { slopeH: number; first: number; last: number }>();
  for (const s of seriesOf(o.samples)) {
    const after = s.points.filter(([h]) => h >= warmH);
    const sl = slope(after) / s.scale;
    const e = ends(after);
    results.set(s.name, { slopeH: sl, first: e.first / s.scale, last: e.last / s.scale });
    const vals = s.points.map((p) => p[1] / s.scale);
    console.log(
      `  ${s.name.padEnd(24)} ${sparkline(vals, 48).padEnd(48)} ${fmt(Math.min(...vals), 1)} … ${fmt(Math.max(...vals), 1)} ${s.unit}, ` +
        `slope ${fmt(sl, 2)} ${s.unit || 'per'}/h`,
    );
  }
  const lives = hostLives(o.samples, warmH);
  const medianLife = quantile(
    lives.map((l) => l.slopeH),
    0.5,
  );
  if (lives.length > 0)
    console.log(
      `  each engine host within its life: median slope ${fmt(medianLife, 2)} MB/h over ${lives.length} hosts`,
    );
  for (const l of lives.filter((x) => x.hours >= LONG_LIFE_H))
    console.log(
      `  engine host ${l.pid}: ${fmt(l.hours * 60, 0)} min after warm-up, RSS ${fmt(l.firstMb, 1)} → ${fmt(l.lastMb, 1)} MB (medians of the first and last fifth), slope ${fmt(l.slopeH, 2)} MB/h`,
    );
  verdicts(results, lives, unexplained, o.daemonErrors);
}

function verdicts(
  r: Map<string, { slopeH: number; first: number; last: number }>,
  lives: readonly HostLife[],
  unexplained: number,
  daemonErrors: string[],
): void {
  const rss = r.get('agent RSS')!;
  console.log(
    `\nagent RSS slope ≤ 1 MB/h: ${check('soak agent RSS slope', rss.slopeH, 'MB/h', '≤ 1', rss.slopeH <= 1)} (${fmt(rss.slopeH, 2)} MB/h)`,
  );
  for (const [name, tol] of [
    ['agent descriptors', 2],
    ['agent threads', 1],
    ['agent timers', 2],
    ['engine hosts descriptors', 4],
    ['engine hosts threads', 2],
  ] as const) {
    const x = r.get(name)!;
    if (!Number.isFinite(x.first)) continue;
    const growth = x.last - x.first;
    console.log(
      `${name}: no growth (last fifth − first fifth ≤ ${tol}): ${check(`soak ${name} growth`, growth, '', `≤ ${tol}`, growth <= tol)} (${fmt(x.first, 0)} → ${fmt(x.last, 0)})`,
    );
  }
  const long = lives.filter((l) => l.hours >= LONG_LIFE_H).map((l) => l.slopeH);
  if (long.length > 0) {
    const med = quantile(long, 0.5);
    console.log(
      `engine host RSS flat (median slope of the ${long.length} hosts that lived ≥ ${LONG_LIFE_H * 60} min after warm-up ≤ 5 MB/h): ${check('soak host RSS slope', med, 'MB/h', '≤ 5', med <= 5)} (${fmt(med, 2)} MB/h)`,
    );
  } else if (lives.length > 0)
    console.log(
      `engine host RSS flat: not judged: no host lived ${LONG_LIFE_H * 60} min after warm-up (each was killed or swapped sooner; SOAK_FAULTS=broker-restart,hot-swap keeps them)`,
    );
  const wal = r.get('agent.db-wal')!;
  const data = r.get('data dir (no models)')!;
  console.log(
    `disk: WAL ≤ 64 MB ${check('soak WAL size', wal.last, 'MB', '≤ 64', wal.last <= 64)}, data dir ≤ 128 MB (the outbox's 64 MB limit + history) ${check('soak data dir', data.last, 'MB', '≤ 128', data.last <= 128)} (${fmt(data.last, 1)} MB, ${fmt(data.slopeH, 2)} MB/h)`,
  );
  console.log(
    `requests failed other than by an injected fault = 0: ${check('soak unexplained failures', unexplained, '', '0', unexplained === 0)} (${unexplained})`,
  );
  console.log(`agent error log lines: ${daemonErrors.length}`);
  for (const e of daemonErrors.slice(0, 5)) console.log(`  ${e}`);
}
