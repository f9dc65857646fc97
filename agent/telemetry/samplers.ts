import { readdirSync, readFileSync, statfsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type CpuLoad, procCpuLoad, procMemory } from './proc-readers.js';
import { liveTimers } from './timer-census.js';

// System samplers. CPU load and memory come from /proc (proc-readers.ts); thermal zones, network counters and
// disk use are read under `root`, which lets tests point at a fixture tree. No child processes, no polling
// between samples. What the kernel answers from memory (procfs, sysfs listings, statfs) is read synchronously:
// each asynchronous call is several thread-pool round trips that wake the idle agent's loop (bench/idle).
// Only a sensor's temperature stays asynchronous, since some thermal drivers read it over a slow bus.
// Metrics are flat names → numbers so that aggregation, history and Home Assistant treat them alike.

export type MetricSample = Record<string, number>;

export interface Sampler {
  readonly name: string;
  sample(): Promise<MetricSample>;
}

export function cpuSampler(load: () => Promise<CpuLoad> = procCpuLoad()): Sampler {
  return {
    name: 'cpu',
    async sample() {
      const l = await load();
      const out: MetricSample = { 'cpu.load_pct': l.currentLoad };
      l.cpus.forEach((c, i) => {
        out[`cpu.core${i}.load_pct`] = c.load;
      });
      return out;
    },
  };
}

export function memorySampler(
  mem: () => Promise<{ total: number; available: number }> = () => procMemory(),
): Sampler {
  return {
    name: 'memory',
    async sample() {
      const m = await mem();
      const used = m.total - m.available;
      return {
        'mem.used_bytes': used,
        'mem.available_bytes': m.available,
        'mem.used_pct': m.total > 0 ? (used / m.total) * 100 : 0,
      };
    },
  };
}

/** Names a thermal zone by its `type`, made safe for a metric name (`cpu-0-0-0-thermal` → `cpu-0-0-0`). */
export function thermalZoneName(type: string, index: number): string {
  const cleaned = type
    .trim()
    .replace(/[-_]?thermal$/, '')
    .replace(/[^A-Za-z0-9_-]/g, '_');
  return cleaned.length > 0 ? cleaned : `zone${index}`;
}

export function thermalSampler(root: string): Sampler {
  const base = join(root, 'sys', 'class', 'thermal');
  return {
    name: 'thermal',
    async sample() {
      const out: MetricSample = {};
      let entries: string[];
      try {
        entries = readdirSync(base).filter((e) => /^thermal_zone\d+$/.test(e));
      } catch {
        return out; // No thermal framework (containers, some x86 hosts).
      }
      await Promise.all(
        entries.map(async (zone) => {
          const index = Number(zone.slice('thermal_zone'.length));
          try {
            const type = readFileSync(join(base, zone, 'type'), 'utf8');
            const temp = await readFile(join(base, zone, 'temp'), 'utf8');
            const milli = Number(temp.trim());
            if (Number.isFinite(milli)) {
              let name = thermalZoneName(type, index);
              if (`temp.${name}_c` in out) name = `${name}_${index}`;
              out[`temp.${name}_c`] = milli / 1000;
            }
          } catch {
            // A zone whose sensor is powered down returns EIO/ENODATA; skip it this round.
          }
        }),
      );
      return out;
    },
  };
}

/** Parses /proc/net/dev into cumulative byte counters per interface (loopback left out). */
export function parseNetDev(text: string): Map<string, { rx: number; tx: number }> {
  const out = new Map<string, { rx: number; tx: number }>();
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    const iface = line.slice(0, colon).trim();
    const fields = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number);
    if (iface === 'lo' || fields.length < 9) continue;
    out.set(iface, { rx: fields[0]!, tx: fields[8]! });
  }
  return out;
}

export function networkSampler(root: string, monotonicMs: () => number): Sampler {
  let previous: { at: number; counters: Map<string, { rx: number; tx: number }> } | undefined;
  return {
    name: 'network',
    async sample() {
      let text: string;
      try {
        text = readFileSync(join(root, 'proc', 'net', 'dev'), 'utf8');
      } catch {
        return {};
      }
      const now = monotonicMs();
      const counters = parseNetDev(text);
      const out: MetricSample = {};
      if (previous !== undefined && now > previous.at) {
        const secs = (now - previous.at) / 1000;
        for (const [iface, c] of counters) {
          const p = previous.counters.get(iface);
          // Counters reset when an interface is re-created; skip that interval rather than report a spike.
          if (p === undefined || c.rx < p.rx || c.tx < p.tx) continue;
          const safe = iface.replace(/[^A-Za-z0-9_-]/g, '_');
          out[`net.${safe}.rx_bps`] = ((c.rx - p.rx) * 8) / secs;
          out[`net.${safe}.tx_bps`] = ((c.tx - p.tx) * 8) / secs;
        }
      }
      previous = { at: now, counters };
      return out;
    },
  };
}

/** Disk use of the filesystem holding `path` (the data directory: where models and the outbox live). */
export function diskSampler(path: string): Sampler {
  return {
    name: 'disk',
    async sample(): Promise<MetricSample> {
      try {
        const s = statfsSync(path);
        const total = s.blocks * s.bsize;
        const free = s.bavail * s.bsize;
        return {
          'disk.used_pct': total > 0 ? ((total - free) / total) * 100 : 0,
          'disk.free_bytes': free,
        };
      } catch {
        return {};
      }
    },
  };
}

/**
 * The agent process itself: memory, open descriptors and what keeps its event loop alive (handles, and timers
 * among them). Growth in any of these over days is a leak; the soak benchmark fits slopes to them.
 */
export function processSampler(): Sampler {
  return {
    name: 'agent',
    async sample() {
      const mem = process.memoryUsage();
      const resources = process.getActiveResourcesInfo();
      const allTimers = liveTimers();
      let fds: number | undefined;
      try {
        fds = readdirSync('/proc/self/fd').length;
      } catch {
        fds = undefined;
      }
      return {
        'agent.rss_bytes': mem.rss,
        'agent.heap_used_bytes': mem.heapUsed,
        'agent.external_bytes': mem.external,
        'agent.handles': resources.length,
        // The timers that keep the loop alive; unref'd ones only with the bench's census (timer-census.ts).
        'agent.timers': resources.filter((r) => r === 'Timeout').length,
        ...(allTimers !== undefined ? { 'agent.timers_all': allTimers } : {}),
        ...(fds !== undefined ? { 'agent.fds': fds } : {}),
      };
    },
  };
}

export function defaultSamplers(options: {
  root: string;
  dataDir: string;
  monotonicMs: () => number;
}): Sampler[] {
  return [
    cpuSampler(),
    memorySampler(),
    thermalSampler(options.root),
    networkSampler(options.root, options.monotonicMs),
    diskSampler(options.dataDir),
    processSampler(),
  ];
}
