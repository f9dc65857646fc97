// The workloads' services over the runtime's slots: voice and vision sharing one priority (voice first) and one
// admission gate per slot, the acting assistant beside them, the wake monitor and its clips; and the run-time
// keys that reach them on a reload. Built once in the module's start, then handed to each edge.
import { join } from 'node:path';
import { errorMessage } from '../../lib/errors.js';
import type { AgentConfig } from '../config/schema.js';
import type { VisionConfig } from '../config/sections/vision.js';
import type { VoiceConfig } from '../config/sections/voice.js';
import type { AgentContext, PublishEvent } from '../module.js';
import { SLOT_NAMES, type SlotName } from '../plan/types.js';
import { resolveVisionConfig, resolveVoiceConfig } from './config.js';
import { SlotGate, VoicePriority } from './slots/scheduler.js';
import type { WorkloadModels } from './slots/slot-models.js';
import { AssistantHub } from './tools/hub.js';
import { decodeImage, fitFrame, type RgbFrame } from './vision/image.js';
import { VisionService } from './vision/service.js';
import { VoiceService } from './voice/service.js';
import type { VoiceTurnStore } from './voice/turn-store.js';
import { WakeClipStore } from './wake/clips.js';
import { WakeMonitor } from './wake/monitor.js';

export interface WorkloadServices {
  priority: VoicePriority;
  voice: VoiceService;
  vision: VisionService;
  gateFor: (slot: SlotName) => SlotGate;
  wakeMonitor: WakeMonitor;
  clips: WakeClipStore | undefined;
  hub: AssistantHub;
}

export function queueDepthsOf(gates: ((slot: SlotName) => SlotGate) | undefined): Record<string, number> {
  return gates ? Object.fromEntries(SLOT_NAMES.map((s) => [s, gates(s).queued])) : {};
}

/** Copies the run-time keys into the objects the services hold (they read them per session, turn or frame). */
export function assignLive(vc: VoiceConfig, vic: VisionConfig, config: AgentConfig): void {
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

/** Decodes an uploaded image and fits it to the vision model's frame (the OpenAI, Ollama and assistant edges). */
export function frameDecoder(vic: VisionConfig): (bytes: Uint8Array) => Promise<RgbFrame> {
  return async (bytes) => fitFrame(await decodeImage(bytes), vic.frameWidth, vic.frameHeight);
}

/** Turns older than the retention go now and then every `everyMs`; the timer is cleared on stop. */
export function sweepTurns(turnStore: VoiceTurnStore, everyMs: number): NodeJS.Timeout {
  turnStore.prune();
  const sweep = setInterval(() => turnStore.prune(), everyMs);
  sweep.unref();
  return sweep;
}

/** The voice and vision services over the slots, sharing one priority (voice first) and the slot gates. */
export function createServices(
  ctx: AgentContext,
  config: { voice: VoiceConfig; vision: VisionConfig },
  models: WorkloadModels,
  turnStore: VoiceTurnStore,
  publishEvent: PublishEvent | undefined,
): WorkloadServices {
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
