import type { ExecutionContext } from 'ava';
import { Ollama } from 'ollama';
import type { AgentConfig } from '../../agent/config/schema.js';
import type { OllamaListenerConfig } from '../../agent/config/sections/ollama.js';
import type { EngineHostFactory } from '../../agent/runtime/engine/engine-port.js';
import { loopbackAgentConfig } from './agent-config.js';
import { startWorkloadsAgent } from './workloads-agent.js';

export async function startOllamaAgent(
  t: ExecutionContext,
  options: { hosts?: EngineHostFactory; listener?: Partial<OllamaListenerConfig> } = {},
) {
  const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-ollama-');
  const config: AgentConfig = {
    ...base,
    slots: { 'voice.llm': { model: 'tiny-llm' }, 'vision.vlm': { model: 'tiny-vlm' } },
    vision: { concurrency: 1, maxQueued: 0, retryAfterS: 7 },
    ...(options.listener
      ? { ollama: { listener: { enabled: true, bind: '127.0.0.1', port: 0, ...options.listener } } }
      : {}),
  };
  const { port, token, workloads, runtime, logger } = await startWorkloadsAgent(t, {
    dataDir,
    config,
    models: ['tiny-llm', 'tiny-vlm'],
    hosts: options.hosts,
  });
  const host = `http://127.0.0.1:${port}`;
  const client = new Ollama({ host, headers: { Authorization: `Bearer ${token}` } });
  return {
    host,
    token,
    client,
    listenerPort: workloads.ollamaListenerPort(),
    runtime,
    /** The agent's log lines (JSON), for what the API logs rather than answers. */
    logLines: logger.lines,
  };
}
