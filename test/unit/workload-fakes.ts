// Test doubles for the workloads' model port: chat models handed in directly, or a runtime answering slotInfo.
// Unit tests only.
import type { SlotName } from '../../agent/plan/types.js';
import type {
  GenerateEvent,
  GenerateRequest,
  TensorIn,
  TensorOut,
} from '../../agent/runtime/engine/engine-port.js';
import type { SlotInfo } from '../../agent/runtime/runtime.js';
import { EnergyVad } from '../../agent/workloads/audio/vad.js';
import type { ChatModel } from '../../agent/workloads/shared/chat-model.js';
import { WorkloadError } from '../../agent/workloads/shared/errors.js';
import type { WorkloadModels, WorkloadRuntime } from '../../agent/workloads/slots/slot-models.js';

/** WorkloadModels over fixed chat models; a slot without one is "not placed", `unavailable` blocks them all. */
export function fakeModels(
  chat: Partial<Record<SlotName, ChatModel>>,
  unavailable?: string,
  wake?: ReturnType<WorkloadModels['wake']>,
): WorkloadModels & { requested: SlotName[] } {
  const requested: SlotName[] = [];
  const missing = (slot: SlotName) =>
    unavailable ?? (chat[slot] ? undefined : `No model placed on slot ${slot}: fake`);
  return {
    requested,
    unavailable: () => unavailable,
    missing,
    configured: (slot) => chat[slot] !== undefined,
    modelId: (slot) => chat[slot]?.id,
    version: (slot) => (chat[slot] ? '1.0.0' : undefined),
    capabilities: (slot) => chat[slot]?.capabilities,
    describe: (slot) => chat[slot]?.id ?? missing(slot) ?? slot,
    chat(slot) {
      requested.push(slot);
      const why = missing(slot);
      if (why) throw new WorkloadError(unavailable ? 'ENOENGINE' : 'ENOMODEL', why);
      return chat[slot]!;
    },
    vad: (energy) => new EnergyVad(energy),
    async load(slot) {
      const why = missing(slot);
      if (why) throw new WorkloadError(unavailable ? 'ENOENGINE' : 'ENOMODEL', why);
    },
    park: async () => false,
    parked: () => false,
    contextTokens: (slot) => (chat[slot] ? 2048 : undefined),
    wake() {
      if (!wake)
        throw new WorkloadError(
          unavailable ? 'ENOENGINE' : 'ENOMODEL',
          unavailable ?? 'No model placed on slot voice.wake: fake',
        );
      return wake;
    },
  };
}

/** A runtime that answers slotInfo from a table and streams a fixed reply; records what it was asked. */
export class FakeWorkloadRuntime implements WorkloadRuntime {
  engineUnavailableReason: string | undefined;
  slots: Partial<Record<SlotName, SlotInfo>>;
  readonly requests: Array<{ slot: SlotName; request: GenerateRequest }> = [];
  readonly forwards: Array<{ slot: SlotName; inputs: TensorIn[] }> = [];
  readonly spoken: Array<{ slot: SlotName; text: string }> = [];
  /** Set to make every forward fail (a VAD host that crashed and is being restarted). */
  forwardError: Error | undefined;

  constructor(slots: Partial<Record<SlotName, SlotInfo>>, engineUnavailableReason?: string) {
    this.slots = slots;
    this.engineUnavailableReason = engineUnavailableReason;
  }

  slotInfo(slot: SlotName): SlotInfo {
    return this.slots[slot] ?? { status: 'unconfigured' };
  }

  /** The runtime's serving: streams a fixed reply, speaks a short tone, forwards a fixed VAD answer. */
  readonly serving: WorkloadRuntime['serving'] = {
    stream: (slot, request) => this.#stream(slot, request),
    speak: (slot, request) => this.#speak(slot, request),
    forward: (slot, inputs) => this.#forward(slot, inputs),
  };

  async *#stream(slot: SlotName, request: GenerateRequest): AsyncGenerator<GenerateEvent> {
    this.requests.push({ slot, request });
    yield { type: 'text', text: `${slot} says hi` };
    yield {
      type: 'done',
      finishReason: 'stop',
      stats: { promptTokens: 4, decodeTokens: 3, prefillMs: 1, decodeMs: 2 },
    };
  }

  async *#speak(
    slot: SlotName,
    request: { text: string },
  ): AsyncGenerator<{ samples: Float32Array; sampleRate: number }> {
    this.spoken.push({ slot, text: request.text });
    yield { samples: new Float32Array(240).fill(0.2), sampleRate: 24000 };
  }

  async #forward(slot: SlotName, inputs: TensorIn[]): Promise<TensorOut[]> {
    if (this.forwardError) throw this.forwardError;
    this.forwards.push({ slot, inputs: inputs.map((t) => ({ data: t.data.slice(), shape: [...t.shape] })) });
    return [
      { name: 'output', data: new Float32Array([0.75]), shape: [1, 1] },
      { name: 'stateN', data: new Float32Array(256).fill(0.5), shape: [2, 1, 128] },
    ];
  }
}
