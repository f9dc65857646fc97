// An agent serving the Ollama API over the fixture models (tiny-llm on voice.llm, tiny-vlm on vision.vlm), for
// the Ollama tests: the official client with the pairing token as its bearer key, and the listener's port when
// the test turns it on.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { Ollama } from 'ollama';
import type { AgentConfig } from '../../agent/config/schema.js';
import type { OllamaListenerConfig } from '../../agent/config/sections/ollama.js';
import { createAgent } from '../../agent/main.js';
import type { EngineHostFactory } from '../../agent/runtime/engine/engine-port.js';
import { createWorkloadsModule } from '../../agent/workloads/module.js';
import { createMemoryLogger } from '../../lib/log.js';
import { slotRuntimeModules } from '../engine/_slots.js';
import { loopbackAgentConfig } from './agent-config.js';

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
  const slots = slotRuntimeModules(['tiny-llm', 'tiny-vlm'], options.hosts ? { hosts: options.hosts } : {});
  const workloads = createWorkloadsModule({ runtime: slots.runtime });
  const logger = createMemoryLogger();
  const agent = createAgent(config, {
    logger,
    modules: [...slots.modules, workloads],
  });
  await agent.start();
  await slots.settled();
  t.teardown(async () => {
    await agent.stop('test');
    rmSync(dataDir, { recursive: true, force: true });
  });
  const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
  const host = `http://127.0.0.1:${agent.http.port}`;
  const client = new Ollama({ host, headers: { Authorization: `Bearer ${token}` } });
  return {
    host,
    token,
    client,
    listenerPort: workloads.ollamaListenerPort(),
    runtime: slots.runtime,
    /** The agent's log lines (JSON), for what the API logs rather than answers. */
    logLines: logger.lines,
  };
}
