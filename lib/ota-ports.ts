// OTA's activation and health-probe ports: what an OTA job needs from whatever serves models. One definition,
// here in lib/, because two sides meet on it: ota/'s job runner calls these ports and agent/'s runtime
// implements them (agent/runtime/ota-ports.ts). Defined in either of the two, the other would have to import
// it, and agent/ imports nothing of ota/ outside the composition root (scripts/check-layers.ts, FEATURES).
// The installer port is OTA's alone and stays in ota/jobs/ports.ts.

/**
 * What an activation achieved. `serving: false` is not a failure: the version is selected and will serve as
 * soon as a slot uses the model (a fleet often pushes a model before configuring its slot), but there is
 * nothing running to health-check yet. An activation that should serve and does not throws instead.
 */
export type ActivationOutcome = { serving: true } | { serving: false; why: string };

/**
 * Activating, rolling back and committing a model version. `jobId` is the OTA job asking: the runtime records
 * it as the author of the version it selects and names it in the replan reason, so that "why does this slot
 * run 2.0.0" is answered with the job that did it.
 */
export interface ActivationPort {
  /** The version serving now, if any. */
  activeVersion(modelId: string): Promise<string | undefined>;
  /**
   * Hot-swaps the model to `version` (already installed). Resolving to nothing means it serves. `previous` is
   * the version the job found serving before (its journal holds it): the job hands it down, so the port need
   * not ask what serves to know what a failed gate goes back to.
   */
  activate(
    modelId: string,
    version: string,
    jobId: string,
    previous: string | undefined,
    // biome-ignore lint/suspicious/noConfusingVoidType: ports without a notion of serving (the store's) return Promise<void>.
  ): Promise<ActivationOutcome | void>;
  /** After a failed gate: back to `version`, or no version of this model when undefined. */
  rollback(modelId: string, version: string | undefined, jobId: string): Promise<void>;
  /** The gate passed: `version` stays; `previous` is kept on disk for a later rollback until GC. */
  commit(modelId: string, version: string, previous: string | undefined): Promise<void>;
}

export interface ProbeRequest {
  modelId: string;
  version: string;
  prompt: string;
  maxNewTokens: number;
  /** For vision models: a reference image the probe prompt refers to. */
  image?: string;
  timeoutMs: number;
}

export interface ProbeResult {
  ttftMs: number;
  decodeTokensPerSecond: number;
  text: string;
}

/** One probe prompt on what serves the model now. */
export interface HealthProbe {
  /** Runs the probe prompt on what is active now; throws when the model does not load or answer. */
  measure(request: ProbeRequest): Promise<ProbeResult>;
}
