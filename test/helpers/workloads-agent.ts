// A real agent with the workloads module over fixture models placed on slots, started and settled, stopped and
// its data dir removed when the test ends; the pairing token read from that data dir. The API helpers
// (openai-agent.ts, ollama-agent.ts) put their protocol's client on top; integration tests of one API (the board's
// MCP server, the voice socket, a tool round) start theirs here too.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import type { AgentConfig } from '../../agent/config/schema.js';
import { createAgent } from '../../agent/main.js';
import type { EngineHostFactory } from '../../agent/runtime/engine/engine-port.js';
import { createWorkloadsModule, type WorkloadsModuleDeps } from '../../agent/workloads/module.js';
import { createMemoryLogger } from '../../lib/log.js';
import { type ModelSource, type SlotModules, slotRuntimeModules } from '../engine/_slots.js';

export async function startWorkloadsAgent(
  t: ExecutionContext,
  options: {
    dataDir: string;
    config: AgentConfig;
    models: readonly ModelSource[];
    hosts?: EngineHostFactory | undefined;
    /** More of the workloads module's dependencies (the board MCP server's options, ...); a function, as some of
     *  them read the slots' runtime. */
    workloadsDeps?: (runtime: SlotModules['runtime']) => Omit<WorkloadsModuleDeps, 'runtime'>;
  },
) {
  const slots = slotRuntimeModules(options.models, options.hosts ? { hosts: options.hosts } : {});
  const workloads = createWorkloadsModule({
    ...options.workloadsDeps?.(slots.runtime),
    runtime: slots.runtime,
  });
  const logger = createMemoryLogger();
  const agent = createAgent(options.config, { logger, modules: [...slots.modules, workloads] });
  await agent.start();
  await slots.settled();
  t.teardown(async () => {
    await agent.stop('test');
    rmSync(options.dataDir, { recursive: true, force: true });
  });
  const token = readFileSync(join(options.dataDir, 'pairing-token'), 'utf8').trim();
  return { agent, port: agent.http.port, token, workloads, runtime: slots.runtime, logger };
}
