// The models the workloads use come from the runtime's slots: the runtime decides which engine host serves each
// slot (placement, fallback, hot swap) and the workloads only ask for `voice.llm` or `vision.vlm`. Nothing here
// loads MNN: every model runs in an engine host process.

import { errorMessage } from '../../../lib/errors.js';
import type { ModelKind, SlotName } from '../../plan/types.js';
import type { TensorIn, TensorOut } from '../../runtime/engine/engine-port.js';
import type { Runtime, SlotInfo } from '../../runtime/runtime.js';
import type { SlotServing } from '../../runtime/serving/serving.js';
import { EnergyVad, type EnergyVadOptions, SileroVad, type VoiceActivityDetector } from '../audio/vad.js';
import type { ChatModel, ModelCapabilities } from '../shared/chat-model.js';
import { WorkloadError } from '../shared/errors.js';
import { readModelTemplate } from '../shared/template/model-template.js';
import { type PackageDirOf, type WakeModelInfo, wakeModelInfo, wakeTensorModel } from '../wake/model.js';
import type { WakeTensorModel } from '../wake/stream.js';
import { runtimeChatModel } from './runtime-chat-model.js';

/** The serving port the workloads call; loading on a client's request (Ollama's keep_alive) needs `acquire`,
 *  which doubles may leave out. */
export type WorkloadServing = Pick<SlotServing, 'stream' | 'speak' | 'forward'> &
  Partial<Pick<SlotServing, 'acquire'>>;

/**
 * The part of the runtime the workloads use (Runtime implements it; unit tests hand in their own). Requests go to
 * its `serving` (serving.ts), the part that leases the slot's host. The served model's config path (its chat
 * template) and unloading on a client's request (keep_alive) are optional: doubles without them cannot do that.
 */
export type WorkloadRuntime = Pick<Runtime, 'engineUnavailableReason' | 'slotInfo'> & {
  readonly serving: WorkloadServing;
} & Partial<Pick<Runtime, 'servedConfigPath' | 'park' | 'isParked' | 'contextTokens'>>;

export interface WorkloadModels {
  /** Why no model can run at all (the runtime is not running, MNN is missing), or undefined. */
  unavailable(): string | undefined;
  /** Why the slot cannot serve now, in words its user can act on; undefined when a model is placed on it. */
  missing(slot: SlotName): string | undefined;
  /** The slot as a chat model; a WorkloadError (ENOMODEL, or ENOENGINE without MNN) with missing()'s words. */
  chat(slot: SlotName): ChatModel;
  /** The id of the model placed on the slot, also while it cannot serve (for listings); else undefined. */
  modelId(slot: SlotName): string | undefined;
  /** What the model placed on the slot takes (from its catalog kind), without loading it; else undefined. */
  capabilities(slot: SlotName): ModelCapabilities | undefined;
  /** The version of the model placed on the slot, or undefined. */
  version(slot: SlotName): string | undefined;
  /** Whether the configuration uses the slot at all (a model or a built-in on it). */
  configured(slot: SlotName): boolean;
  /** Loads the slot's model if it was unloaded (park) and waits until it serves; a WorkloadError if it cannot. */
  load(slot: SlotName, signal?: AbortSignal): Promise<void>;
  /** Unloads the slot's model until its next request; false when none serves it or the runtime cannot. */
  park(slot: SlotName, reason: string): Promise<boolean>;
  /** Whether the slot's model is unloaded by park() and loads again on its next request. */
  parked(slot: SlotName): boolean;
  /** The context the slot's KV cache is sized for (slots.<slot>.contextTokens), in tokens. */
  contextTokens(slot: SlotName): number | undefined;
  /** What serves the slot, for the dashboard: `tiny-llm@1.0.0`, `energy-vad (built-in)`, or why nothing does. */
  describe(slot: SlotName): string;
  /** Silero over the runtime when a VAD model is placed on voice.vad; the energy detector for the built-in, an
   *  unconfigured slot, or a model that cannot serve now (the reason is logged). */
  vad(energy?: Partial<EnergyVadOptions>): VoiceActivityDetector;
  /** The wake-word model on voice.wake (its keywords and its pipeline step), or a WorkloadError saying why none. */
  wake(): WakeModelInfo & { model: WakeTensorModel };
}

/** What a model can take, from its catalog kind (the manifest's task). */
export function capabilitiesOf(kind: ModelKind | undefined): ModelCapabilities {
  return { vision: kind === 'vlm', audio: kind === 'omni' || kind === 'asr', talker: kind === 'tts' };
}

export function slotModels(
  runtime: () => WorkloadRuntime | undefined,
  log?: (msg: string, fields: Record<string, unknown>) => void,
  packageDir: PackageDirOf = () => undefined,
): WorkloadModels {
  const unavailable = (): string | undefined => {
    const rt = runtime();
    if (!rt) return 'The runtime is not running: no model can serve the workloads';
    return rt.engineUnavailableReason;
  };
  const missing = (slot: SlotName): string | undefined => {
    const rt = runtime();
    return unavailable() ?? (rt ? missingIn(slot, rt.slotInfo(slot)) : undefined);
  };
  return {
    unavailable,
    missing,
    modelId(slot) {
      const info = runtime()?.slotInfo(slot);
      return info && 'modelId' in info ? info.modelId : undefined;
    },
    capabilities(slot) {
      const info = runtime()?.slotInfo(slot);
      return info && 'modelId' in info ? capabilitiesOf(info.kind) : undefined;
    },
    version(slot) {
      const info = runtime()?.slotInfo(slot);
      return info && 'version' in info ? info.version : undefined;
    },
    configured(slot) {
      const info = runtime()?.slotInfo(slot);
      return info !== undefined && info.status !== 'unconfigured';
    },
    describe(slot) {
      const info = runtime()?.slotInfo(slot);
      if (info?.status === 'builtin') return `${info.builtin} (built-in)`;
      const why = missing(slot);
      if (why || !info || !('modelId' in info)) return why ?? `nothing serves ${slot}`;
      return `${info.modelId}@${info.version}${info.status === 'degraded' ? ' (degraded)' : ''}`;
    },
    async load(slot, signal) {
      const rt = runtime();
      const why = missing(slot);
      if (why || !rt)
        throw new WorkloadError(unavailable() ? 'ENOENGINE' : 'ENOMODEL', why ?? `nothing serves ${slot}`);
      if (!rt.serving.acquire) return;
      try {
        (await rt.serving.acquire(slot, signal ? { signal } : {})).release();
      } catch (err) {
        throw new WorkloadError('ENOMODEL', `${slot} could not be loaded: ${errorMessage(err)}`);
      }
    },
    async park(slot, reason) {
      return (await runtime()?.park?.(slot, reason)) ?? false;
    },
    parked: (slot) => runtime()?.isParked?.(slot) ?? false,
    contextTokens: (slot) => runtime()?.contextTokens?.(slot),
    chat(slot) {
      const rt = runtime();
      const why = missing(slot);
      if (why || !rt)
        throw new WorkloadError(unavailable() ? 'ENOENGINE' : 'ENOMODEL', why ?? `nothing serves ${slot}`);
      const info = rt.slotInfo(slot);
      if (!('modelId' in info)) throw new WorkloadError('ENOMODEL', `${slot} is not served by a model`);
      return runtimeChatModel(rt.serving, slot, {
        id: info.modelId,
        capabilities: capabilitiesOf(info.kind),
        template: () => {
          const configPath = rt.servedConfigPath?.(slot);
          return configPath ? readModelTemplate(configPath) : undefined;
        },
      });
    },
    wake() {
      const rt = runtime();
      if (!rt) throw new WorkloadError('ENOENGINE', unavailable() ?? 'The runtime is not running');
      return { ...wakeModelInfo(rt, packageDir), model: wakeTensorModel(rt.serving) };
    },
    vad(energy = {}) {
      const rt = runtime();
      const info = rt?.slotInfo('voice.vad');
      if (!rt || !info || info.status === 'unconfigured' || info.status === 'builtin')
        return new EnergyVad(energy);
      const why = missing('voice.vad');
      if (why) {
        log?.('Silero VAD unavailable, using the energy VAD', { reason: why });
        return new EnergyVad(energy);
      }
      const silero = new SileroVad({
        forward: (inputs: TensorIn[]): Promise<TensorOut[]> =>
          rt.serving.forward('voice.vad', inputs, AbortSignal.timeout(VAD_FRAME_BUDGET_MS)),
        // The runtime owns the instance; a session only stops using it.
        dispose: async () => {},
      });
      return new SlotVad(silero, new EnergyVad(energy), log);
    },
  };
}

/** How long one frame may wait for the VAD host (a restart or a swap in progress) before the energy VAD answers
 *  for it: audio keeps flowing at one frame per 32 ms, so a session must never stall on its detector. */
export const VAD_FRAME_BUDGET_MS = 300;

/**
 * Silero in its engine host, with the energy detector running alongside (it is cheap, and its noise floor must
 * stay current) to answer for frames the host cannot: crashed, being restarted or swapped. The outage is logged
 * once, and Silero's recurrent state starts afresh when the host is back.
 */
export class SlotVad implements VoiceActivityDetector {
  readonly kind = 'silero';
  readonly #silero: SileroVad;
  readonly #energy: EnergyVad;
  readonly #log: ((msg: string, fields: Record<string, unknown>) => void) | undefined;
  #outage = false;

  constructor(
    silero: SileroVad,
    energy: EnergyVad,
    log?: (msg: string, fields: Record<string, unknown>) => void,
  ) {
    this.#silero = silero;
    this.#energy = energy;
    this.#log = log;
  }

  /** Whether the last frame was judged by the energy VAD because Silero's host could not answer. */
  get degraded(): boolean {
    return this.#outage;
  }

  async process(frame: Float32Array): Promise<number> {
    const energy = await this.#energy.process(frame);
    try {
      const p = await this.#silero.process(frame);
      if (this.#outage) {
        this.#outage = false;
        this.#log?.('Silero VAD is back', {});
      }
      return p;
    } catch (err) {
      if (!this.#outage) {
        this.#outage = true;
        this.#log?.('Silero VAD unavailable, the energy VAD answers until it is back', {
          reason: errorMessage(err),
        });
      }
      this.#silero.reset();
      return energy;
    }
  }

  reset(): void {
    this.#silero.reset();
    this.#energy.reset();
  }

  dispose(): Promise<void> {
    return this.#silero.dispose();
  }
}

function missingIn(slot: SlotName, info: SlotInfo): string | undefined {
  switch (info.status) {
    case 'placed':
    case 'degraded':
      return undefined;
    case 'unconfigured':
      return `No model placed on slot ${slot}: install one (mnn-edge models import <dir>) and set slots.${slot}`;
    case 'builtin':
      return `Slot ${slot} is served by the built-in ${info.builtin}, which is not a language model`;
    case 'disabled':
      return `Slot ${slot} is disabled (slots.${slot}.enabled)`;
    case 'unloaded':
      return `Slot ${slot} has no model loaded: ${info.reasons.join('; ') || 'the placement left it out'}`;
  }
}
