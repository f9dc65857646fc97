import type { MnnConfig, ModelKind, SlotName } from '../plan/types.js';

/** Everything needed to start one engine host and load one model into it. */
export interface InstanceSpec {
  /** Candidate key from the planner: `model@version/variant|config`. */
  key: string;
  modelId: string;
  version: string;
  variantId: string;
  /** What the catalog says the model is; `vad` loads as a Module (Silero), everything else as an LLM. */
  kind?: ModelKind;
  configPath: string;
  /** The variant's own MNN keys over config.json; the placement's `config` wins over them. */
  configOverrides?: Record<string, unknown>;
  config: MnnConfig;
  /** The planner's estimate; used to decide blue/green vs stop-then-load. */
  memoryBytes: number;
}

/** What should run: the instances, and which instance serves each slot (absent = the slot is not served). */
export interface TargetState {
  instances: InstanceSpec[];
  serving: Partial<Record<SlotName, string>>;
}

export type InstanceStatus =
  | 'starting'
  | 'loading'
  | 'warming'
  | 'ready'
  | 'draining'
  | 'stopping'
  | 'failed';

export interface CurrentInstance {
  spec: InstanceSpec;
  status: InstanceStatus;
  pid?: number;
  rssBytes?: number;
}

export interface CurrentState {
  instances: CurrentInstance[];
  serving: Partial<Record<SlotName, string>>;
}

export interface MemoryView {
  /** MemAvailable now. */
  availableBytes: number;
  /** Kept free even during a swap (the agent, the OS, workload buffers). */
  reserveBytes: number;
}

/** One thing the runner does. Steps are data, so the step planner is tested by the steps it returns. */
export type Step =
  | { kind: 'startHost'; instance: InstanceSpec }
  | { kind: 'load'; instance: string }
  | { kind: 'warmUp'; instance: string }
  /** New requests for these slots go to `to` (undefined: the slots wait, unserved) — one atomic flip. */
  | { kind: 'switch'; slots: SlotName[]; to: string | undefined }
  /** Wait for in-flight requests on the instance to finish; cancel them at the drain deadline. */
  | { kind: 'drain'; instance: string }
  | { kind: 'unload'; instance: string }
  /** Stop the host process and verify that it is gone and its memory came back. */
  | { kind: 'stopHost'; instance: string };

export type SwapStrategy = 'blue-green' | 'stop-then-load';

export interface StepPlan {
  steps: Step[];
  /** Why the steps look the way they do, e.g. why a swap stops the old instance first. */
  notes: string[];
  strategies: Record<string, SwapStrategy>;
}
