// Home Assistant's Wyoming integration opens a connection and sends `describe` whenever it checks a service, and
// several satellites and pipelines may do so at once (issue 31). This part of bench/wyoming opens N connections at
// the same moment, each sending `describe` as soon as it is connected, with the upstream-style client
// (test/helpers/wyoming-client.ts), and reports how many got `info`, how many were refused (and with which code),
// and each answer's latency from the start of its connect to the `info`. `describe` needs no model, so this runs
// on an agent whose engine is unavailable, on any machine.
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentConfig } from '../../agent/config/schema.js';
import { createAgent } from '../../agent/main.js';
import { unavailableHosts } from '../../agent/runtime/module.js';
import { createWorkloadsModule } from '../../agent/workloads/module.js';
import { unavailableMessage } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { slotRuntimeModules } from '../../test/engine/_slots.js';
import { loopbackAgentConfig } from '../../test/helpers/agent-config.js';
import { WyomingTestClient } from '../../test/helpers/wyoming-client.js';
import { type Summary, summarize } from './stats.js';

export interface BurstRun {
  clients: number;
  maxConnections: number;
  mode: 'atOnce' | 'held';
}

export interface DescribeBurst extends BurstRun {
  answered: number;
  /** Refusals by their `error` code (ECONNLIMIT past wyoming.maxConnections). */
  refused: Record<string, number>;
  /** Connections that ended with neither `info` nor an `error` event. */
  lost: number;
  /** To `info`, ms, of the answered ones (from the connect when atOnce, from the describe when held). */
  latency: Summary;
}

type Outcome = { ms: number } | { code: string } | undefined;

/** Connects; undefined when the connection could not be made at all. */
async function tryConnect(port: number): Promise<WyomingTestClient | undefined> {
  try {
    return await WyomingTestClient.connect(port);
  } catch {
    return undefined;
  }
}

/** Sends describe on an open connection: `info` (latency from `t0`), an `error` code, or nothing before the close. */
async function describeOn(
  client: WyomingTestClient | undefined,
  t0: number,
  keepOpen = false,
): Promise<Outcome> {
  if (client === undefined) return undefined;
  try {
    client.send('describe');
    const info = await client.next('info', 0, 60_000);
    return { ms: info.at - t0 };
  } catch {
    const error = client.events.find((e) => e.type === 'error');
    return error ? { code: String(error.data['code']) } : undefined;
  } finally {
    if (!keepOpen) client.socket.destroy();
  }
}

/**
 * One burst. `atOnce`: each client connects and sends describe as soon as it is connected, then closes, as Home
 * Assistant's checks do (latency from the start of its connect). `held`: every connection is opened first, all
 * send describe together (latency from that moment), and none closes before all are answered, so that the server
 * holds them all at once and wyoming.maxConnections is met.
 */
async function burst(port: number, clients: number, mode: 'atOnce' | 'held'): Promise<Outcome[]> {
  if (mode === 'atOnce') {
    return Promise.all(
      Array.from({ length: clients }, async () => {
        const t0 = performance.now();
        return describeOn(await tryConnect(port), t0);
      }),
    );
  }
  const open = await Promise.all(Array.from({ length: clients }, () => tryConnect(port)));
  const t0 = performance.now();
  // Closed only once every one has its answer: the server sees them all open at the same time.
  const outcomes = await Promise.all(open.map((c) => describeOn(c, t0, true)));
  for (const c of open) c?.socket.destroy();
  return outcomes;
}

/** Opens one agent per maxConnections value and runs each burst of `clients` concurrent describes on it. */
export async function describeBursts(runs: readonly BurstRun[]): Promise<DescribeBurst[]> {
  const out: DescribeBurst[] = [];
  for (const maxConnections of new Set(runs.map((r) => r.maxConnections))) {
    const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-bench-wyoming-describe-');
    const config: AgentConfig = {
      ...base,
      slots: { 'voice.asr': { model: 'tiny-omni-audio' }, 'voice.llm': { model: 'tiny-llm' } },
      wyoming: { enabled: true, bind: '127.0.0.1', port: 0, maxConnections },
    };
    const slots = slotRuntimeModules(['tiny-omni-audio', 'tiny-llm'], {
      hosts: unavailableHosts(unavailableMessage('describe needs no engine')),
    });
    const workloads = createWorkloadsModule({ runtime: slots.runtime, agentVersion: 'bench' });
    const agent = createAgent(config, {
      logger: createMemoryLogger(),
      modules: [...slots.modules, workloads],
    });
    await agent.start();
    await slots.settled();
    try {
      const port = workloads.wyomingAnnouncement()!.port;
      // One warm-up describe, so that the first burst does not also pay for the first connection's code paths.
      await burst(port, 1, 'atOnce');
      for (const run of runs.filter((r) => r.maxConnections === maxConnections)) {
        const results = await burst(port, run.clients, run.mode);
        const ms: number[] = [];
        const refused: Record<string, number> = {};
        let lost = 0;
        for (const r of results) {
          if (r === undefined) lost++;
          else if ('ms' in r) ms.push(r.ms);
          else refused[r.code] = (refused[r.code] ?? 0) + 1;
        }
        out.push({ ...run, answered: ms.length, refused, lost, latency: summarize(ms) });
        // The next burst starts on a server with every connection of this one closed.
        const open = () => workloads.metrics()['workload.wyoming.connections'] ?? 0;
        for (let waited = 0; open() > 0 && waited < 5_000; waited += 20) await sleep(20);
      }
    } finally {
      await agent.stop('bench done');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  return out;
}
