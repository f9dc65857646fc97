// The workloads as an agent module: voice and vision services, the OpenAI-compatible API and the two session
// sockets on the agent's router, the board's own microphone/camera loops when configured, and the turn store's
// retention sweep. The models are the runtime's slots (voice.*, vision.vlm): this module never loads MNN, so a
// native fault costs an engine host, never the agent.
import { errorMessage } from '../common/errors.js';
import type { VisionConfig } from '../config/sections/vision.js';
import type { VoiceConfig } from '../config/sections/voice.js';
import type { WorkloadStatus } from '../dashboard/ports.js';
import { createSessionLimiter, type SessionLimiter } from '../http/session-limits.js';
import type { AgentContext, AgentModule } from '../module.js';
import type { SlotName } from '../plan/types.js';
import type { MetricSample } from '../telemetry/samplers.js';
import {
  AplaySink,
  type AudioSink,
  type AudioSource,
  arecordSource,
  WavFileSink,
  wavFileSource,
} from './audio/io.js';
import { resolveVisionConfig, resolveVoiceConfig } from './config.js';
import { registerOpenAiRoutes } from './openai/routes.js';
import { SlotGate, VoicePriority } from './scheduler.js';
import { slotModels, type WorkloadRuntime } from './slot-models.js';
import { ffmpegFrames } from './vision/frame-sources.js';
import { decodeImage, fitFrame } from './vision/image.js';
import { VisionService } from './vision/service.js';
import { registerVisionSocket, VISION_WS_PATH } from './vision/socket.js';
import { runVoiceLoop } from './voice/loop.js';
import { VoiceService } from './voice/service.js';
import { registerVoiceSocket, VOICE_WS_PATH } from './voice/socket.js';
import { VoiceTurnStore } from './voice/turn-store.js';

export interface WorkloadsModuleDeps {
  /** The runtime module's runtime (undefined until it has started): every model the workloads use is a slot. */
  runtime: () => WorkloadRuntime | undefined;
  /** Shared with the dashboard's own sockets, so one limit covers every live session. */
  sessions?: SessionLimiter;
  wsMessagesPerSecond?: number;
  /** Watch-mode answers as device events (the fleet module publishes them on MQTT `events`). */
  publishEvent?: (name: string, payload: Record<string, unknown>) => void;
  retentionSweepMs?: number;
}

export interface WorkloadsModule extends AgentModule {
  /** For the dashboard API's WorkloadsPort. */
  voiceStatus(): WorkloadStatus;
  visionStatus(): WorkloadStatus;
  /** For telemetry's WorkloadMetricsProvider. */
  metrics(): MetricSample;
}

/** The slots the OpenAI-compatible API offers, each under the id of the model placed on it. */
const API_SLOTS: readonly SlotName[] = ['voice.llm', 'voice.omni', 'vision.vlm'];

function unavailable(reason: string): WorkloadStatus {
  return { available: false, reason };
}

export function createWorkloadsModule(deps: WorkloadsModuleDeps): WorkloadsModule {
  let voiceConfig: VoiceConfig | undefined;
  let visionConfig: VisionConfig | undefined;
  let store: VoiceTurnStore | undefined;
  let voice: VoiceService | undefined;
  const removers: Array<() => void> = [];
  const background = new AbortController();
  const loops: Array<Promise<void>> = [];
  let sweep: NodeJS.Timeout | undefined;

  let log: AgentContext['logger'] | undefined;
  const models = slotModels(deps.runtime, (msg, fields) => log?.warn(msg, fields));

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
      return store?.metrics() ?? {};
    },

    async start(ctx: AgentContext) {
      log = ctx.logger;
      voiceConfig = resolveVoiceConfig(ctx.config['voice']);
      visionConfig = resolveVisionConfig(ctx.config['vision']);
      const vc = voiceConfig;
      const vic = visionConfig;
      const turnStore = new VoiceTurnStore(ctx.db, vc.retention, () => ctx.clock.nowMs());
      store = turnStore;
      turnStore.prune();
      sweep = setInterval(() => turnStore.prune(), deps.retentionSweepMs ?? 3_600_000);
      sweep.unref();

      const priority = new VoicePriority();
      const gates = new Map<SlotName, SlotGate>();
      const gateFor = (slot: SlotName) => {
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
      const visionGate = gateFor('vision.vlm');
      voice = new VoiceService(vc, {
        models,
        clock: ctx.clock,
        sink: turnStore,
        priority,
        log: (msg, fields) => ctx.logger.info(msg, fields),
      });
      const vision = new VisionService(vic, { models, gate: visionGate, clock: ctx.clock, priority });
      const sessions = deps.sessions ?? createSessionLimiter(ctx.config.http.maxSessions);
      const messagesPerSecond = deps.wsMessagesPerSecond ?? 200;

      const startedAt = Math.floor(ctx.clock.nowMs() / 1000);
      // Read on every request: a model installed or swapped while the agent runs shows up at once. Slots that
      // share a model appear once, under the first slot that serves it.
      // A placed model is listed even while the engine is missing: asking it then answers 503 with the reason.
      const apiModels = () => {
        const seen = new Set<string>();
        return API_SLOTS.flatMap((slot) => {
          const id = models.modelId(slot);
          if (id === undefined || seen.has(id)) return [];
          seen.add(id);
          return [{ id, created: startedAt, gate: gateFor(slot), open: async () => models.chat(slot) }];
        });
      };
      removers.push(
        registerOpenAiRoutes({
          router: ctx.router,
          models: apiModels,
          maxImageBytes: vic.maxFrameBytes,
          decodeImage: async (bytes) => fitFrame(await decodeImage(bytes), vic.frameWidth, vic.frameHeight),
          nowMs: () => ctx.clock.nowMs(),
          logger: log.child('openai'),
        }),
        registerVoiceSocket({
          router: ctx.router,
          open: (id, overrides) => voice!.open(id, overrides),
          describeStages: () => voice!.describe(),
          sessions,
          messagesPerSecond,
          clock: ctx.clock,
          logger: log,
        }),
        registerVisionSocket({
          router: ctx.router,
          vision,
          sessions,
          messagesPerSecond,
          clock: ctx.clock,
          logger: log,
          ...(deps.publishEvent
            ? { publish: (e: Record<string, unknown>) => deps.publishEvent!('vision.watch', e) }
            : {}),
        }),
      );

      if (vc.input.source !== 'none') {
        loops.push(
          (async () => {
            const session = await voice!.open('board');
            const source: AudioSource =
              vc.input.source === 'alsa'
                ? arecordSource(vc.input.device, background.signal)
                : wavFileSource(vc.input.wavPath ?? '');
            const sink: AudioSink =
              vc.output.sink === 'alsa'
                ? new AplaySink(vc.output.device)
                : new WavFileSink(vc.output.wavPath ?? `${ctx.config.dataDir}/voice-reply.wav`);
            try {
              await runVoiceLoop(session, source, sink);
            } finally {
              await session.close();
            }
          })().catch((err: unknown) =>
            ctx.logger.error('board voice loop stopped', { err: errorMessage(err) }),
          ),
        );
      }
      if (vic.watch.enabled && vic.camera) {
        const camera = vic.camera;
        const runner = vision.watch(
          ffmpegFrames(
            camera,
            { width: vic.frameWidth, height: vic.frameHeight, fps: 1 },
            background.signal,
            () => ctx.clock.monotonicMs(),
          ),
          {
            prompt: vic.watch.prompt,
            intervalS: vic.watch.intervalS,
            onSceneChange: vic.watch.onSceneChange,
          },
          background.signal,
        );
        runner.on('answer', (a) =>
          deps.publishEvent?.('vision.watch', {
            camera,
            text: a.text,
            trigger: a.trigger,
            meanAbsDiff: a.diff.meanAbsDiff,
            t: a.wallMs,
            dropped: runner.framesDropped,
            thumbnail: `data:image/png;base64,${a.thumbnail.toString('base64')}`,
          }),
        );
        runner.on('error', (e) => ctx.logger.warn('camera watch', { camera, error: e.message }));
        loops.push(runner.done);
      }
      ctx.logger.info('workloads ready', {
        voice: this.voiceStatus(),
        vision: this.visionStatus(),
        stages: voice.describe(),
        openaiModels: apiModels().map((m) => m.id),
      });
    },

    async stop() {
      if (sweep !== undefined) clearInterval(sweep);
      for (const r of removers.splice(0)) r();
      background.abort();
      await voice?.close();
      await Promise.allSettled(loops);
    },
  };
}
