// The workloads as an agent module: voice and vision services, the OpenAI-compatible API and the two session
// sockets on the agent's router, the board's own microphone/camera loops when configured, and the turn store's
// retention sweep. Everything comes from AgentContext or the deps, so tests start it with an injected engine
// availability and model loader.
import { basename, dirname } from 'node:path';
import { type EngineAvailability, engineAvailability } from '../../engine/src/index.js';
import { errorMessage } from '../common/errors.js';
import type { VisionConfig } from '../config/sections/vision.js';
import type { VoiceConfig } from '../config/sections/voice.js';
import { createSessionLimiter, type SessionLimiter } from '../http/api/limits.js';
import type { WorkloadStatus } from '../http/api/ports.js';
import { registerOpenAiRoutes } from '../http/openai/routes.js';
import { registerVisionSocket, VISION_WS_PATH } from '../http/ws-vision.js';
import { registerVoiceSocket, VOICE_WS_PATH } from '../http/ws-voice.js';
import type { AgentContext, AgentModule } from '../main.js';
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
import { engineModelLoader, type ModelLoader, SharedModels } from './model-loader.js';
import { SlotGate, VoicePriority } from './scheduler.js';
import { ffmpegFrames } from './vision/frame-sources.js';
import { decodeImage, fitFrame } from './vision/image.js';
import { VisionService } from './vision/service.js';
import { runVoiceLoop } from './voice/loop.js';
import { VoiceService } from './voice/service.js';
import { VoiceTurnStore } from './voice/turn-store.js';

export interface WorkloadsModuleDeps {
  availability?: () => EngineAvailability;
  loader?: ModelLoader;
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

/** The id a model has in /v1/models: its package directory's name (`…/qwen2.5-0.5b/config.json` → qwen2.5-0.5b). */
export function modelIdOf(configPath: string): string {
  return basename(dirname(configPath));
}

function unavailable(reason: string): WorkloadStatus {
  return { available: false, reason };
}

export function createWorkloadsModule(deps: WorkloadsModuleDeps = {}): WorkloadsModule {
  const availability = deps.availability ?? engineAvailability;
  let voiceConfig: VoiceConfig | undefined;
  let visionConfig: VisionConfig | undefined;
  let store: VoiceTurnStore | undefined;
  let voice: VoiceService | undefined;
  const removers: Array<() => void> = [];
  const background = new AbortController();
  const loops: Array<Promise<void>> = [];
  let sweep: NodeJS.Timeout | undefined;

  const engineReason = (): string | undefined => {
    const a = availability();
    return a.available ? undefined : `MNN engine not available: ${a.reason}`;
  };

  return {
    name: 'workloads',

    voiceStatus() {
      const c = voiceConfig;
      if (!c) return unavailable('The workloads module has not started');
      if (!c.enabled) return unavailable('Voice is disabled in the configuration (voice.enabled)');
      const engine = engineReason();
      if (engine) return unavailable(engine);
      if (!c.models.llm) return unavailable('No reply model configured for voice (voice.models.llm)');
      if (!c.models.omni && !c.models.asr)
        return unavailable('No speech recognition model configured (voice.models.asr)');
      return { available: true, path: VOICE_WS_PATH };
    },

    visionStatus() {
      const c = visionConfig;
      if (!c) return unavailable('The workloads module has not started');
      if (!c.enabled) return unavailable('Vision is disabled in the configuration (vision.enabled)');
      const engine = engineReason();
      if (engine) return unavailable(engine);
      if (!c.model) return unavailable('No vision model configured (vision.model)');
      return { available: true, path: VISION_WS_PATH };
    },

    metrics() {
      return store?.metrics() ?? {};
    },

    async start(ctx: AgentContext) {
      const log = ctx.logger;
      voiceConfig = resolveVoiceConfig(ctx.config['voice']);
      visionConfig = resolveVisionConfig(ctx.config['vision']);
      const vc = voiceConfig;
      const vic = visionConfig;
      const turnStore = new VoiceTurnStore(ctx.db, vc.retention, () => ctx.clock.nowMs());
      store = turnStore;
      turnStore.prune();
      sweep = setInterval(() => turnStore.prune(), deps.retentionSweepMs ?? 3_600_000);
      sweep.unref();

      const models = new SharedModels(deps.loader ?? (await engineModelLoader()), availability);
      const priority = new VoicePriority();
      const gates = new Map<string, SlotGate>();
      const gateFor = (path: string, name: string) => {
        let g = gates.get(path);
        if (!g) {
          g = new SlotGate(name, {
            concurrency: vic.concurrency,
            maxQueued: vic.maxQueued,
            retryAfterS: vic.retryAfterS,
          });
          gates.set(path, g);
        }
        return g;
      };
      const visionGate = gateFor(vic.model ?? '(none)', 'vision.vlm');
      voice = new VoiceService(vc, {
        models,
        clock: ctx.clock,
        sink: turnStore,
        priority,
        log: (msg, fields) => log.info(msg, fields),
      });
      const vision = new VisionService(vic, { models, gate: visionGate, clock: ctx.clock, priority });
      const sessions = deps.sessions ?? createSessionLimiter(ctx.config.http.maxSessions);
      const messagesPerSecond = deps.wsMessagesPerSecond ?? 200;

      const startedAt = Math.floor(ctx.clock.nowMs() / 1000);
      const apiModels = [
        ...(vc.models.llm ? [{ path: vc.models.llm, slot: 'voice.llm' }] : []),
        ...(vic.model ? [{ path: vic.model, slot: 'vision.vlm' }] : []),
      ]
        .filter((m, i, all) => all.findIndex((o) => o.path === m.path) === i)
        .map((m) => ({
          id: modelIdOf(m.path),
          created: startedAt,
          gate: gateFor(m.path, m.slot),
          open: () => models.chat(m.path, 'the OpenAI-compatible API'),
        }));
      removers.push(
        registerOpenAiRoutes({
          router: ctx.router,
          models: () => apiModels,
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
          })().catch((err: unknown) => log.error('board voice loop stopped', { err: errorMessage(err) })),
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
        runner.on('error', (e) => log.warn('camera watch', { camera, error: e.message }));
        loops.push(runner.done);
      }
      log.info('workloads ready', {
        voice: this.voiceStatus(),
        vision: this.visionStatus(),
        stages: voice.describe(),
        openaiModels: apiModels.map((m) => m.id),
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
