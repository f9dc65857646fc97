// Public surface of the engine: the agent imports from here only.

import { type EngineInfoOptions, probeEngineInfo } from './src/host/engine-info.js';
import { createAddonLoader, type EngineAvailability, unavailableMessage } from './src/loader.js';
import type { EngineAddon } from './src/native.js';

export { EngineError, type EngineErrorCode } from './src/errors.js';
export { type GraphLoadOptions, type GraphOutput, MnnGraph, type Tensor } from './src/graph.js';
export {
  EngineHostClient,
  type EngineHostEvents,
  type EngineHostOptions,
  type HostDelivery,
  type HostExit,
  HostGeneration,
  HostSpeech,
} from './src/host/client.js';
export {
  createEngineInfo,
  type EngineInfo,
  type EngineInfoOptions,
  probeEngineInfo,
} from './src/host/engine-info.js';
export type {
  HostGraphOptions,
  HostWakeOptions,
  LoadedGraph,
  LoadedModel,
  LoadedWake,
} from './src/host/protocol.js';
export {
  ARM82_PREFILL_CHUNK,
  arm82ExactChunk,
  arm82SafeSampler,
  type ConversationOptions,
  encoderPrecision,
  type GenerateOptions,
  type GenerationDelivery,
  type GenerationResult,
  type GenerationStats,
  kvBytesPerTokenBound,
  Llm,
  type LlmCapabilities,
  type LlmConfigOverrides,
  LlmGeneration,
  type LlmLoadOptions,
  type LoadTiming,
  MAX_CONVERSATIONS,
  SPEECH_SAMPLE_RATE,
  type SpeakOptions,
  type SpeechChunk,
  weightFiles,
} from './src/llm.js';
export {
  addonCandidates,
  createAddonLoader,
  ENGINE_HELP,
  type EngineAvailability,
  unavailableMessage,
} from './src/loader.js';
export type {
  BackendInfo,
  BackendName,
  ConversationContexts,
  FinishReason,
  PrefixReuse,
  PreparedContexts,
  RuntimeInfo,
  TensorData,
  TensorType,
} from './src/native.js';
export type { AudioInput, ChatMessage, ImageInput } from './src/prompt.js';
export { inertMediaTags, mediaPlaceholder } from './src/prompt.js';
export {
  WAKE_FRAME_SAMPLES,
  WAKE_SAMPLE_RATE,
  type WakeFiles,
  type WakeGraph,
  type WakeHeadGraph,
  type WakeLoadOptions,
  WakePipeline,
  type WakeState,
  type WakeStep,
} from './src/wake.js';
export { defaultTriggerRule, KeywordTrigger, type TriggerRule } from './src/wake-trigger.js';

/** Whether the MNN engine can be used here, and if not, why (the same reason the loader would throw with). */
export function engineAvailability(): EngineAvailability {
  return createAddonLoader().availability();
}

/** The one line a skipped engine test or a refused load prints. */
export function engineUnavailableLine(
  availability: EngineAvailability = engineAvailability(),
): string | undefined {
  return availability.available ? undefined : unavailableMessage(availability.reason);
}

/** The addon, or an EngineError (code ENOENGINE) whose message says what to do. */
export function loadEngineAddon(): EngineAddon {
  return createAddonLoader().load();
}

/** MNN version, backends compiled in and usable, CPU features — in this process: loads the addon and MNN here.
 *  The agent uses engineInfo() instead (a child answers), so MNN never runs in the agent's own process. */
export function runtimeInfo() {
  return loadEngineAddon().runtimeInfo();
}

/** The engine's availability and RuntimeInfo as a short-lived engine host reports it (MNN is never loaded in the
 *  caller). Each call spawns a host; createEngineInfo() keeps the answer. */
export function engineInfo(options: EngineInfoOptions = {}): Promise<EngineAvailability> {
  return probeEngineInfo(options);
}
