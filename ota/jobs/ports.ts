// What the OTA job runner needs from the rest of the agent, as small interfaces. The composition root wires
// the real store and runtime in; tests pass their own.

export interface PackageInstaller {
  /**
   * Unpacks a downloaded, hash-verified package tarball with the archive safety checks, verifies every file
   * against the manifest inside, and installs it as `id@version` without touching what is active. Idempotent:
   * an already installed, intact `id@version` is left alone. Throws OtaRejection('unsafe-archive' |
   * 'manifest-mismatch') for a package that must never be installed.
   */
  install(tarball: string, expect: { id: string; version: string }, signal?: AbortSignal): Promise<void>;
}

/**
 * What an activation achieved. `serving: false` is not a failure: the version is selected and will serve as
 * soon as a slot uses the model (a fleet often pushes a model before configuring its slot), but there is
 * nothing running to health-check yet. An activation that should serve and does not throws instead.
 */
export type ActivationOutcome = { serving: true } | { serving: false; why: string };

export interface ActivationPort {
  /** The version serving now, if any. */
  activeVersion(modelId: string): Promise<string | undefined>;
  /** Hot-swaps the model to `version` (already installed). Resolving to nothing means it serves. */
  // biome-ignore lint/suspicious/noConfusingVoidType: ports written before outcomes existed return Promise<void>.
  activate(modelId: string, version: string): Promise<ActivationOutcome | void>;
  /** After a failed gate: back to `version`, or no version of this model when undefined. */
  rollback(modelId: string, version: string | undefined): Promise<void>;
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

export interface HealthProbe {
  /** Runs the probe prompt on what is active now; throws when the model does not load or answer. */
  measure(request: ProbeRequest): Promise<ProbeResult>;
}
