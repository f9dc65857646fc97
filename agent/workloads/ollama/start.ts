// The Ollama API as a part of the workloads module: its routes on the agent's router, the keep_alive timers
// and, when configured, the listener on Ollama's own port. Returns the stop function.
import { errorMessage } from '../../../lib/errors.js';
import { deepMerge } from '../../config/load.js';
import { type OllamaConfig, ollamaDefaults } from '../../config/sections/ollama.js';
import type { AgentContext } from '../../module.js';
import type { WorkloadModels } from '../slots/slot-models.js';
import type { RgbFrame } from '../vision/image.js';
import { KeepAliveTimers } from './keep-alive.js';
import { type AgentPort, type OllamaListener, startOllamaListener } from './listener.js';
import { registerOllamaRoutes } from './routes.js';
import type { OllamaModel, PullPort } from './types.js';

export interface OllamaApiDeps {
  models: () => readonly OllamaModel[];
  slots: WorkloadModels;
  maxImageBytes: number;
  decodeImage: (bytes: Uint8Array) => Promise<RgbFrame>;
  pulls: () => PullPort | undefined;
}

export function resolveOllamaConfig(section: unknown): OllamaConfig {
  return deepMerge(ollamaDefaults, section ?? {});
}

export interface OllamaApi {
  /** The listener's port on Ollama's side while it listens (ollama.listener), else undefined. */
  readonly listenerPort: number | undefined;
  stop(): Promise<void>;
}

export async function startOllamaApi(ctx: AgentContext, deps: OllamaApiDeps): Promise<OllamaApi> {
  const config = resolveOllamaConfig(ctx.config['ollama']);
  const log = ctx.logger.child('ollama');
  if (!config.enabled) {
    if (config.listener.enabled) log.warn('ollama.listener is on but ollama.enabled is off: no listener');
    return { listenerPort: undefined, stop: async () => {} };
  }
  const keepAlive = new KeepAliveTimers({
    park: (slot, reason) => deps.slots.park(slot, reason),
    nowMs: () => ctx.clock.nowMs(),
    onError: (slot, err) => log.warn('keep_alive unload failed', { slot, error: errorMessage(err) }),
  });
  const remove = registerOllamaRoutes({
    router: ctx.router,
    models: deps.models,
    slots: deps.slots,
    keepAlive,
    maxImageBytes: deps.maxImageBytes,
    decodeImage: deps.decodeImage,
    pulls: deps.pulls,
    nowMs: () => ctx.clock.nowMs(),
    logger: log,
  });
  let listener: OllamaListener | undefined;
  let unlisten = () => {};
  if (config.listener.enabled) {
    let agent: AgentPort | undefined;
    unlisten = ctx.events.on('started', ({ port, address }) => {
      agent = { port, address, secure: ctx.config.http.tls !== undefined };
    });
    const { bind, port, allow } = config.listener;
    try {
      listener = await startOllamaListener(config.listener, () => agent, log);
      log.info('Ollama listener ready', {
        bind,
        port: listener.port,
        allow: allow.length > 0 ? allow : 'anyone',
      });
    } catch (err) {
      // The rest of the agent (and the API on its own port) goes on without it.
      log.error(`The Ollama listener cannot listen on ${bind}:${port}`, { error: errorMessage(err) });
    }
  }
  return {
    listenerPort: listener?.port,
    async stop() {
      unlisten();
      remove();
      keepAlive.close();
      await listener?.close();
    },
  };
}
