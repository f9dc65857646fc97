// The workloads as an agent module: voice and vision services, the OpenAI-compatible API and the two session
// sockets on the agent's router, the board's own microphone/camera loops when configured, and the turn store's
// retention sweep. The models are the runtime's slots (voice.*, vision.vlm): this module never loads MNN, so a
// native fault costs an engine host, never the agent.
import { join } from 'node:path';
import { errorMessage } from '../../lib/errors.js';
import type { AgentConfig } from '../config/schema.js';
import type { VisionConfig } from '../config/sections/vision.js';
import type { VoiceConfig } from '../config/sections/voice.js';
import type { CommandRegistry } from '../fleet/commands.js';
import { createSessionLimiter, type SessionLimiter } from '../http/session-limits.js';
import type { AgentContext, AgentModule, PublishEvent } from '../module.js';
import { SLOT_NAMES, type SlotName } from '../plan/types.js';
import type { SlotState } from '../runtime/measuring/slot-states.js';
import type { MetricSample } from '../telemetry/samplers.js';
import { type ApiModels, apiModelsOf } from './api-models.js';
import { startBoardVoiceLoop, startCameraWatch } from './board-loops.js';
import { type BoardMcpOptions, registerBoardMcp } from './board-mcp.js';
import { resolveVisionConfig, resolveVoiceConfig } from './config.js';
import { type OllamaApi, startOllamaApi } from './ollama/start.js';
import type { PullPort } from './ollama/types.js';
import { registerOpenAiRoutes } from './openai/routes.js';
import { SlotGate, VoicePriority } from './slots/scheduler.js';
import { slotModels, type WorkloadModels, type WorkloadRuntime } from './slots/slot-models.js';
import { AssistantHub } from './tools/hub.js';
import { decodeImage, fitFrame } from './vision/image.js';
import { VisionService } from './vision/service.js';
import { registerVisionSocket, VISION_WS_PATH } from './vision/socket.js';
import { VoiceService } from './voice/service.js';
import { registerVoiceSocket, VOICE_WS_PATH } from './voice/socket.js';
import { VoiceTurnStore } from './voice/turn-store.js';
import { WakeClipStore } from './wake/clips.js';
import type { PackageDirOf } from './wake/model.js';
import { WakeMonitor } from './wake/monitor.js';
import { registerWakeRoutes } from './wake/routes.js';
import { WyomingLifecycle } from './wyoming/lifecycle.js';
import { wyomingGauges } from './wyoming/start.js';

export type WorkloadStatus = { available: true; path: string } | { available: false; reason: string };

/** The runtime slots each workload uses (a model shared with another workload restarts there too). */
export const WORKLOAD_SLOTS: Record<'voice' | 'vision', SlotName[]> = {
  voice: ['voice.vad', 'voice.wake', 'voice.asr', 'voice.llm', 'voice.omni', 'voice.tts'],
  vision: ['vision.vlm'],
};

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
  control?: () => { restart(slots: readonly SlotName[], reason: string): string[] } | undefined;
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

function queueDepthsOf(gates: ((slot: SlotName) => SlotGate) | undefined): Record<string, number> {
  return gates ? Object.fromEntries(SLOT_NAMES.map((s) => [s, gates(s).queued])) : {};
}

/** Copies the run-time keys into the objects the services hold (they read them per session, turn or frame). */
function assignLive(vc: VoiceConfig, vic: VisionConfig, config: AgentConfig): void {
  const v = resolveVoiceConfig(config['voice']);
  const vi = resolveVisionConfig(config['vision']);
  vc.systemPrompt = v.systemPrompt;
  vc.maxNewTokens = v.maxNewTokens;
  vc.maxHistoryMessages = v.maxHistoryMessages;
  vc.wake.keywords = v.wake.keywords;
  vc.tools = v.tools;
  vic.maxNewTokens = vi.maxNewTokens;
  vic.watch.prompt = vi.watch.prompt;
  vic.watch.intervalS = vi.watch.intervalS;
  vic.watch.onSceneChange = vi.watch.onSceneChange;
}

function unavailable(reason: string): WorkloadStatus {
  return { available: false, reason };
}

/** One admission gate per slot, created on first use with vision's concurrency and queue limits. */
function slotGates(vic: VisionConfig): (slot: SlotName) => SlotGate {
  const gates = new Map<SlotName, SlotGate>();
  return (slot) => {
    let g = gates.get(slot);
    if (!g) {
      g = new SlotGate(slot, {
        concurrency: vic.concurrency,
        maxQueued: vic.maxQueued,
        retryAfterS: vic.retryAfterS,
      });
      gates.set(slot, g);
    }
    return g;
  };
}

function registerRestartCommand(deps: WorkloadsModuleDeps): void {
  deps.commands?.register<{ workload: 'voice' | 'vision' }>({
    name: 'restart-workload',
    summary: "restart the engine hosts serving a workload's slots (in-flight requests are cancelled)",
    params: {
      type: 'object',
      additionalProperties: false,
      required: ['workload'],
      properties: { workload: { enum: ['voice', 'vision'] } },
    },
    handler: (params) => {
      const rt = deps.control?.();
      if (!rt) throw new Error('the runtime is not running');
      const slots = WORKLOAD_SLOTS[params.workload];
      const restarted = rt.restart(slots, `operator restart-workload ${params.workload}`);
      return { workload: params.workload, slots, restarted };
    },
  });
}

interface Services {
  voice: VoiceService;
  vision: VisionService;
  gateFor: (slot: SlotName) => SlotGate;
  wakeMonitor: WakeMonitor;
  clips: WakeClipStore | undefined;
  hub: AssistantHub;
}

/** The detection clips' store when voice.wake.clips is on; a directory that cannot be made costs only the clips. */
function wakeClips(ctx: AgentContext, vc: VoiceConfig): WakeClipStore | undefined {
  if (!vc.wake.clips.enabled) return undefined;
  try {
    return new WakeClipStore(join(ctx.config.dataDir, 'wake-clips'), vc.wake.clips);
  } catch (err) {
    ctx.logger.warn('wake clips off: their directory cannot be used', { error: errorMessage(err) });
    return undefined;
  }
}

/** The workloads' edges on the agent's router: the OpenAI-compatible API and the voice and vision sockets. */
function registerEdges(
  ctx: AgentContext,
  deps: WorkloadsModuleDeps,
  services: Services,
  apiModels: () => ApiModels,
  vic: VisionConfig,
): Array<() => void> {
  const { voice, vision } = services;
  const sessions = deps.sessions ?? createSessionLimiter(ctx.config.http.maxSessions);
  const decode = async (bytes: Uint8Array) =>
    fitFrame(await decodeImage(bytes), vic.frameWidth, vic.frameHeight);
  const messagesPerSecond = deps.wsMessagesPerSecond ?? 200;
  return [
    registerOpenAiRoutes({
      router: ctx.router,
      models: apiModels,
      maxImageBytes: vic.maxFrameBytes,
      decodeImage: decode,
      nowMs: () => ctx.clock.nowMs(),
      logger: ctx.logger.child('openai'),
    }),
    registerVoiceSocket({
      router: ctx.router,
      open: (id, overrides) => voice.open(id, overrides),
      describeStages: () => voice.describe(),
      sessions,
      messagesPerSecond,
      clock: ctx.clock,
      logger: ctx.logger,
    }),
    registerVisionSocket({
      router: ctx.router,
      vision,
      sessions,
      messagesPerSecond,
      clock: ctx.clock,
      logger: ctx.logger,
      ...(deps.publishEvent
        ? { publish: (e: Record<string, unknown>) => deps.publishEvent!('vision.watch', e) }
        : {}),
    }),
    services.hub.registerRoutes(ctx.router, { maxBytes: vic.maxFrameBytes, decode }),
    ...registerWakeRoutes({
      router: ctx.router,
      monitor: services.wakeMonitor,
      keywords: () => voice.wakeKeywords(),
      sessions,
      messagesPerSecond,
      clock: ctx.clock,
      ...(services.clips ? { clips: services.clips } : {}),
    }),
  ];
}

/** The loops that run on the board itself: the microphone voice loop and the camera watch, as configured. */
function startBoardLoops(
  ctx: AgentContext,
  config: { voice: VoiceConfig; vision: VisionConfig },
  services: { voice: VoiceService; vision: VisionService; hub: AssistantHub },
  deps: WorkloadsModuleDeps,
  signal: AbortSignal,
): Array<Promise<void>> {
  const loops: Array<Promise<void>> = [];
  const { voice: vc, vision: vic } = config;
  const env = { signal, logger: ctx.logger };
  if (vc.input.source !== 'none')
    loops.push(
      startBoardVoiceLoop(vc, services.voice, {
        ...env,
        dataDir: ctx.config.dataDir,
        speaker: services.hub.speaker,
        ...(deps.publishEvent ? { publishEvent: deps.publishEvent } : {}),
      }),
    );
  if (vic.watch.enabled && vic.camera) {
    const watch = { ...env, monotonicMs: () => ctx.clock.monotonicMs() };
    loops.push(
      startCameraWatch({ ...vic, camera: vic.camera }, services.vision, {
        ...watch,
        ...(deps.publishEvent ? { publishEvent: deps.publishEvent } : {}),
      }),
    );
  }
  return loops;
}

/** Turns older than the retention go now and then every `everyMs`; the timer is cleared on stop. */
function sweepTurns(turnStore: VoiceTurnStore, everyMs: number): NodeJS.Timeout {
  turnStore.prune();
  const sweep = setInterval(() => turnStore.prune(), everyMs);
  sweep.unref();
  return sweep;
}

/** The voice and vision services over the slots, sharing one priority (voice first) and the slot gates. */
function createServices(
  ctx: AgentContext,
  config: { voice: VoiceConfig; vision: VisionConfig },
  models: WorkloadModels,
  turnStore: VoiceTurnStore,
  publishEvent: PublishEvent | undefined,
) {
  const priority = new VoicePriority();
  const gateFor = slotGates(config.vision);
  const clips = wakeClips(ctx, config.voice);
  const wakeMonitor = new WakeMonitor({ nowMs: () => ctx.clock.nowMs(), ...(clips ? { clips } : {}) });
  const vision = new VisionService(config.vision, {
    models,
    gate: gateFor('vision.vlm'),
    clock: ctx.clock,
    priority,
  });
  const hub = new AssistantHub({
    ...{ db: ctx.db, clock: ctx.clock, logger: ctx.logger, models, gateFor, vision },
    voice: config.voice,
    visionConfig: config.vision,
    ...(publishEvent ? { publishEvent } : {}),
  });
  const voice = new VoiceService(config.voice, {
    models,
    clock: ctx.clock,
    sink: turnStore,
    priority,
    wakeMonitor,
    log: (msg, fields) => ctx.logger.info(msg, fields),
    assistant: hub.assistant,
  });
  return { priority, gateFor, voice, vision, wakeMonitor, clips, hub };
}

/** The board as an MCP server (camera, announce, status) at POST /mcp; announcing only where remote callers may act. */
function boardMcp(
  ctx: AgentContext,
  deps: WorkloadsModuleDeps,
  services: ReturnType<typeof createServices>,
  models: WorkloadModels,
  config: { voice: VoiceConfig; vision: VisionConfig },
): () => void {
  const tools = config.voice.tools;
  return registerBoardMcp(
    ctx,
    config,
    { voice: services.voice, vision: services.vision, models },
    {
      announceForRemote: tools.allowRemoteActs && tools.builtins.announce,
      ...deps.mcpServer,
      agentVersion: deps.agentVersion ?? '0.0.0',
    },
  );
}

/** The Ollama-compatible API over the same models as the OpenAI API's, with the agent's hub pulls. */
function startOllama(
  ctx: AgentContext,
  deps: WorkloadsModuleDeps,
  models: WorkloadModels,
  apiModels: () => ApiModels,
  vic: VisionConfig,
): Promise<OllamaApi> {
  return startOllamaApi(ctx, {
    models: apiModels,
    slots: models,
    maxImageBytes: vic.maxFrameBytes,
    decodeImage: async (bytes) => fitFrame(await decodeImage(bytes), vic.frameWidth, vic.frameHeight),
    pulls: () => deps.pulls?.(),
  });
}

export function createWorkloadsModule(deps: WorkloadsModuleDeps): WorkloadsModule {
  let voiceConfig: VoiceConfig | undefined;
  let visionConfig: VisionConfig | undefined;
  let store: VoiceTurnStore | undefined;
  let voice: VoiceService | undefined;
  let wyoming: WyomingLifecycle | undefined;
  let startedCtx: AgentContext | undefined;
  let gates: ((slot: SlotName) => SlotGate) | undefined;
  let hub: AssistantHub | undefined;
  let ollama: OllamaApi | undefined;
  const removers: Array<() => void> = [];
  const background = new AbortController();
  const loops: Array<Promise<void>> = [];
  let sweep: NodeJS.Timeout | undefined;

  let log: AgentContext['logger'] | undefined;
  const models = slotModels(deps.runtime, (msg, fields) => log?.warn(msg, fields), deps.packageDir);

  return {
    name: 'workloads',

    voiceStatus() {
      const c = voiceConfig;
      if (!c) return unavailable('The workloads module has not started');
      if (!c.enabled) return unavailable('Voice is disabled in the configuration (voice.enabled)');
      const missing = voice?.missing();
      if (missing) return unavailable(missing);
      return { available: true, path: VOICE_WS_PATH };
    },

    visionStatus() {
      const c = visionConfig;
      if (!c) return unavailable('The workloads module has not started');
      if (!c.enabled) return unavailable('Vision is disabled in the configuration (vision.enabled)');
      const missing = models.missing('vision.vlm');
      if (missing) return unavailable(missing);
      return { available: true, path: VISION_WS_PATH };
    },

    metrics() {
      return {
        ...(store?.metrics() ?? {}),
        ...wyomingGauges(wyoming?.stats()),
        ...(hub?.stats.metrics() ?? {}),
      };
    },

    wyomingAnnouncement() {
      return wyoming?.announcement();
    },

    queueDepths: () => queueDepthsOf(gates),

    assistant: () => hub,
    ollamaListenerPort: () => ollama?.listenerPort,

    async applySettings(config) {
      if (!voiceConfig || !visionConfig || !startedCtx) return { wyoming: 'unchanged' };
      assignLive(voiceConfig, visionConfig, config);
      voice?.applyWakeRules();
      if (!wyoming) return { wyoming: 'unchanged' };
      return { wyoming: await wyoming.apply(config) };
    },

    async start(ctx: AgentContext) {
      log = ctx.logger;
      startedCtx = ctx;
      voiceConfig = resolveVoiceConfig(ctx.config['voice']);
      visionConfig = resolveVisionConfig(ctx.config['vision']);
      const vc = voiceConfig;
      const vic = visionConfig;
      const turnStore = new VoiceTurnStore(ctx.db, vc.retention, () => ctx.clock.nowMs());
      store = turnStore;
      sweep = sweepTurns(turnStore, deps.retentionSweepMs ?? 3_600_000);
      const services = createServices(ctx, { voice: vc, vision: vic }, models, turnStore, deps.publishEvent);
      const { priority, gateFor } = services;
      gates = gateFor;
      hub = services.hub;
      hub.start();
      voice = services.voice;

      const apiModels = apiModelsOf(models, gateFor, deps.slotStates, Math.floor(ctx.clock.nowMs() / 1000));
      const sessions = deps.sessions ?? createSessionLimiter(ctx.config.http.maxSessions);
      removers.push(...registerEdges(ctx, { ...deps, sessions }, services, apiModels, vic));
      removers.push(boardMcp(ctx, deps, services, models, { voice: vc, vision: vic }));
      ollama = await startOllama(ctx, deps, models, apiModels, vic);
      wyoming = new WyomingLifecycle({
        ctx,
        voice,
        voiceConfigOf: (config) => resolveVoiceConfig(config['voice']),
        sessions,
        priority,
        agentVersion: deps.agentVersion ?? '0.0.0',
      });
      await wyoming.restart(ctx.config);
      registerRestartCommand(deps);

      loops.push(...startBoardLoops(ctx, { voice: vc, vision: vic }, services, deps, background.signal));
      ctx.logger.info('workloads ready', {
        voice: this.voiceStatus(),
        vision: this.visionStatus(),
        stages: voice.describe(),
        openaiModels: apiModels().map((m) => m.id),
        wyoming: wyoming?.port ?? 'off',
      });
    },

    async stop() {
      if (sweep !== undefined) clearInterval(sweep);
      await wyoming?.close();
      await ollama?.stop();
      for (const r of removers.splice(0)) r();
      background.abort();
      await voice?.close();
      await Promise.allSettled(loops);
      await hub?.stop();
    },
  };
}
