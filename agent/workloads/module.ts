// The workloads as an agent module: voice and vision services, the OpenAI-compatible API and the two session
// sockets on the agent's router, the board's own microphone/camera loops when configured, and the turn store's
// retention sweep. The models are the runtime's slots (voice.*, vision.vlm): this module never loads MNN, so a
// native fault costs an engine host, never the agent. The services are built in services.ts and each edge is
// mounted by its own file (router-edges, ollama-edge, board-mcp, restart-command, board-loops).
import type { AgentConfig } from '../config/schema.js';
import type { VisionConfig } from '../config/sections/vision.js';
import type { VoiceConfig } from '../config/sections/voice.js';
import type { CommandRegistry } from '../fleet/commands.js';
import { createSessionLimiter, type SessionLimiter } from '../http/session-limits.js';
import type { AgentContext, AgentModule, PublishEvent } from '../module.js';
import type { SlotState } from '../runtime/measuring/slot-states.js';
import type { MetricSample } from '../telemetry/samplers.js';
import { apiModelsOf } from './api-models.js';
import { startBoardLoops } from './board-loops.js';
import { type BoardMcpOptions, mountBoardMcp } from './board-mcp.js';
import { resolveVisionConfig, resolveVoiceConfig } from './config.js';
import type { OllamaApi } from './ollama/start.js';
import type { PullPort } from './ollama/types.js';
import { startOllamaEdge } from './ollama-edge.js';
import { type RestartControl, registerRestartCommand } from './restart-command.js';
import { registerRouterEdges } from './router-edges.js';
import {
  assignLive,
  createServices,
  frameDecoder,
  queueDepthsOf,
  sweepTurns,
  type WorkloadServices,
} from './services.js';
import { slotModels, type WorkloadModels, type WorkloadRuntime } from './slots/slot-models.js';
import type { AssistantHub } from './tools/hub.js';
import { VISION_WS_PATH } from './vision/socket.js';
import { VOICE_WS_PATH } from './voice/socket.js';
import { VoiceTurnStore } from './voice/turn-store.js';
import type { PackageDirOf } from './wake/model.js';
import { WyomingLifecycle } from './wyoming/lifecycle.js';
import { wyomingGauges } from './wyoming/start.js';

export { WORKLOAD_SLOTS } from './restart-command.js';

export type WorkloadStatus = { available: true; path: string } | { available: false; reason: string };

export interface WorkloadsModuleDeps {
  /** The runtime module's runtime (undefined until it has started): every model the workloads use is a slot. */
  runtime: () => WorkloadRuntime | undefined;
  /** Shared with the dashboard's own sockets, so one limit covers every live session. */
  sessions?: SessionLimiter;
  wsMessagesPerSecond?: number;
  /** Watch-mode answers as device events (the fleet module publishes them on MQTT `events`). */
  publishEvent?: PublishEvent;
  retentionSweepMs?: number;
  /** The runtime's slot states: /v1/models lists only models that can answer (serving, or loading for the first
   *  time; a retry after failed loads is not listed, as the failed model before it was not). */
  slotStates?: () => readonly SlotState[];
  /** The fleet's registry: `restart-workload` goes there (it restarts through `control`). */
  commands?: Pick<CommandRegistry, 'register'>;
  control?: () => RestartControl | undefined;
  /** Announced in Wyoming's info. */
  agentVersion?: string;
  /** Where an installed package's files are (the wake-word package's keywords are read there). */
  packageDir?: PackageDirOf;
  /** The board's MCP server at POST /mcp: its status source, and whether remote clients may announce. */
  mcpServer?: BoardMcpOptions;
  /** The agent's hub pulls, for the Ollama API's /api/pull (undefined until the model store is open). */
  pulls?: () => PullPort | undefined;
}

export interface WorkloadsModule extends AgentModule {
  /** For the dashboard API's WorkloadsPort. */
  voiceStatus(): WorkloadStatus;
  visionStatus(): WorkloadStatus;
  /** For telemetry's WorkloadMetricsProvider. */
  metrics(): MetricSample;
  /** The Wyoming server's port while it listens and is to be announced over mDNS (`wyoming.mdns`). */
  wyomingAnnouncement(): { port: number } | undefined;
  /**
   * The reload path's part for the workloads: the voice and vision keys that may change at run time take effect
   * for the next session, turn or watch frame; the Wyoming server restarts when its settings changed.
   */
  applySettings(config: AgentConfig): Promise<{ wyoming: number | 'off' | 'unchanged' }>;
  /** Requests waiting at each slot's admission gate (for /metrics). */
  queueDepths(): Record<string, number>;
  /** The acting assistant with its tools and timers (the MCP client sets its sources there); once started. */
  assistant(): AssistantHub | undefined;
  /** The port of the listener on Ollama's side (ollama.listener) while it listens. */
  ollamaListenerPort(): number | undefined;
}

function unavailable(reason: string): WorkloadStatus {
  return { available: false, reason };
}

/** What a started module runs: filled in as start goes, so that stop undoes a start that failed half way. */
interface Started {
  config: { voice: VoiceConfig; vision: VisionConfig };
  store: VoiceTurnStore;
  services: WorkloadServices;
  sweep: NodeJS.Timeout;
  removers: Array<() => void>;
  background: AbortController;
  loops: Array<Promise<void>>;
  ollama?: OllamaApi;
  wyoming?: WyomingLifecycle;
}

/** The services, the turn store's sweep, the edges on the router and the board's MCP server (no awaits). */
function startServices(ctx: AgentContext, deps: WorkloadsModuleDeps, models: WorkloadModels) {
  const config = {
    voice: resolveVoiceConfig(ctx.config['voice']),
    vision: resolveVisionConfig(ctx.config['vision']),
  };
  const store = new VoiceTurnStore(ctx.db, config.voice.retention, () => ctx.clock.nowMs());
  const sweep = sweepTurns(store, deps.retentionSweepMs ?? 3_600_000);
  const services = createServices(ctx, config, models, store, deps.publishEvent);
  services.hub.start();
  const started: Started = {
    config,
    store,
    services,
    sweep,
    removers: [],
    background: new AbortController(),
    loops: [],
  };
  const apiModels = apiModelsOf(
    models,
    services.gateFor,
    deps.slotStates,
    Math.floor(ctx.clock.nowMs() / 1000),
  );
  const sessions = deps.sessions ?? createSessionLimiter(ctx.config.http.maxSessions);
  const frames = { maxFrameBytes: config.vision.maxFrameBytes, decode: frameDecoder(config.vision) };
  started.removers.push(
    ...registerRouterEdges(ctx, services, apiModels, {
      ...frames,
      sessions,
      messagesPerSecond: deps.wsMessagesPerSecond ?? 200,
      publishEvent: deps.publishEvent,
    }),
    mountBoardMcp(ctx, config, { ...services, models }, deps.mcpServer, deps.agentVersion ?? '0.0.0'),
  );
  return { started, apiModels, sessions, frames };
}

/** The listeners of their own (Ollama's, Wyoming's), the fleet command and the board's loops. */
async function startListeners(
  ctx: AgentContext,
  deps: WorkloadsModuleDeps,
  models: WorkloadModels,
  { started, apiModels, sessions, frames }: ReturnType<typeof startServices>,
): Promise<void> {
  const { config, services } = started;
  started.ollama = await startOllamaEdge(ctx, { ...frames, models, apiModels, pulls: deps.pulls });
  started.wyoming = new WyomingLifecycle({
    ctx,
    voice: services.voice,
    voiceConfigOf: (c) => resolveVoiceConfig(c['voice']),
    sessions,
    priority: services.priority,
    agentVersion: deps.agentVersion ?? '0.0.0',
  });
  await started.wyoming.restart(ctx.config);
  registerRestartCommand(deps.commands, deps.control);
  started.loops.push(...startBoardLoops(ctx, config, services, deps.publishEvent, started.background.signal));
}

export function createWorkloadsModule(deps: WorkloadsModuleDeps): WorkloadsModule {
  let started: Started | undefined;
  let log: AgentContext['logger'] | undefined;
  const models = slotModels(deps.runtime, (msg, fields) => log?.warn(msg, fields), deps.packageDir);

  return {
    name: 'workloads',

    voiceStatus() {
      const c = started?.config.voice;
      if (!c) return unavailable('The workloads module has not started');
      if (!c.enabled) return unavailable('Voice is disabled in the configuration (voice.enabled)');
      const missing = started?.services.voice.missing();
      if (missing) return unavailable(missing);
      return { available: true, path: VOICE_WS_PATH };
    },

    visionStatus() {
      const c = started?.config.vision;
      if (!c) return unavailable('The workloads module has not started');
      if (!c.enabled) return unavailable('Vision is disabled in the configuration (vision.enabled)');
      const missing = models.missing('vision.vlm');
      if (missing) return unavailable(missing);
      return { available: true, path: VISION_WS_PATH };
    },

    metrics() {
      return {
        ...(started?.store.metrics() ?? {}),
        ...wyomingGauges(started?.wyoming?.stats()),
        ...(started?.services.hub.stats.metrics() ?? {}),
      };
    },

    wyomingAnnouncement: () => started?.wyoming?.announcement(),
    queueDepths: () => queueDepthsOf(started?.services.gateFor),
    assistant: () => started?.services.hub,
    ollamaListenerPort: () => started?.ollama?.listenerPort,

    async applySettings(config) {
      if (!started) return { wyoming: 'unchanged' };
      assignLive(started.config.voice, started.config.vision, config);
      started.services.voice.applyWakeRules();
      if (!started.wyoming) return { wyoming: 'unchanged' };
      return { wyoming: await started.wyoming.apply(config) };
    },

    async start(ctx: AgentContext) {
      log = ctx.logger;
      const begun = startServices(ctx, deps, models);
      started = begun.started;
      await startListeners(ctx, deps, models, begun);
      ctx.logger.info('workloads ready', {
        voice: this.voiceStatus(),
        vision: this.visionStatus(),
        stages: started.services.voice.describe(),
        openaiModels: begun.apiModels().map((m) => m.id),
        wyoming: started.wyoming?.port ?? 'off',
      });
    },

    async stop() {
      if (!started) return;
      const { sweep, wyoming, ollama, removers, background, services, loops } = started;
      clearInterval(sweep);
      await wyoming?.close();
      await ollama?.stop();
      for (const r of removers.splice(0)) r();
      background.abort();
      await services.voice.close();
      await Promise.allSettled(loops);
      await services.hub.stop();
    },
  };
}
