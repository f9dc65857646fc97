// What the OTA job runner needs from the rest of the agent, as small interfaces. The composition root wires
// the real store and runtime in; tests pass their own. The activation and health-probe ports are shared with
// the runtime that implements them, so they live in lib/ota-ports.ts; the installer is OTA's own.

export interface PackageInstaller {
  /**
   * Unpacks a downloaded, hash-verified package tarball with the archive safety checks, verifies every file
   * against the manifest inside, and installs it as `id@version` without touching what is active. Idempotent:
   * an already installed, intact `id@version` is left alone. Throws OtaRejection('unsafe-archive' |
   * 'manifest-mismatch') for a package that must never be installed.
   */
  install(tarball: string, expect: { id: string; version: string }, signal?: AbortSignal): Promise<void>;
}
