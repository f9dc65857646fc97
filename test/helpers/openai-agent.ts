// An agent serving the OpenAI-compatible API over fixture models placed on the slots the test names, for the
// OpenAI tests: the official `openai` client with the pairing token as its key (and the base URL and token, for
// requests the client does not make).
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import OpenAI from 'openai';
import type { AgentConfig } from '../../agent/config/schema.js';
import { createAgent } from '../../agent/main.js';
import type { EngineHostFactory } from '../../agent/runtime/engine/engine-port.js';
import { createWorkloadsModule } from '../../agent/workloads/module.js';
import { createMemoryLogger } from '../../lib/log.js';
import { type ModelSource, slotRuntimeModules } from '../engine/_slots.js';
import { loopbackAgentConfig } from './agent-config.js';

export interface OpenAiAgentOptions {
  /** The fixture models imported into the agent's store (a fixture's name, or a directory with the id to give). */
  models: readonly ModelSource[];
  /** The configuration's slots: which model serves which slot. */
  slots: AgentConfig['slots'];
  /** More configuration (the vision section, ...). */
  config?: Partial<Omit<AgentConfig, 'slots'>>;
  /** Engine hosts other than real ones (hosts that cannot start stand in for a missing MNN). */
  hosts?: EngineHostFactory;
  /** The client's request timeout, ms (default: the client's own). */
  timeoutMs?: number;
}

export async function startOpenAiAgent(t: ExecutionContext, options: OpenAiAgentOptions) {
  const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-openai-');
  const config: AgentConfig = { ...base, ...options.config, slots: options.slots };
  const slots = slotRuntimeModules(options.models, options.hosts ? { hosts: options.hosts } : {});
  const agent = createAgent(config, {
    logger: createMemoryLogger(),
    modules: [...slots.modules, createWorkloadsModule({ runtime: slots.runtime })],
  });
  await agent.start();
  await slots.settled();
  t.teardown(async () => {
    await agent.stop('test');
    rmSync(dataDir, { recursive: true, force: true });
  });
  const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
  const baseURL = `http://127.0.0.1:${agent.http.port}/v1`;
  const client = new OpenAI({
    baseURL,
    apiKey: token,
    maxRetries: 0,
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
  });
  return { baseURL, token, client };
}
