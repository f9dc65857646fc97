import type { ExecutionContext } from 'ava';
import OpenAI from 'openai';
import type { AgentConfig } from '../../agent/config/schema.js';
import type { EngineHostFactory } from '../../agent/runtime/engine/engine-port.js';
import type { ModelSource } from '../engine/_slots.js';
import { loopbackAgentConfig } from './agent-config.js';
import { startWorkloadsAgent } from './workloads-agent.js';

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
  const { port, token } = await startWorkloadsAgent(t, {
    dataDir,
    config,
    models: options.models,
    hosts: options.hosts,
  });
  const baseURL = `http://127.0.0.1:${port}/v1`;
  const client = new OpenAI({
    baseURL,
    apiKey: token,
    maxRetries: 0,
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
  });
  return { baseURL, token, client };
}
