// What the MNN engine offers on this device, asked of a short-lived engine host: loading the addon (and MNN with
// it) in the caller would print MNN's CPU banner on the agent's stdout and put a native library into the one
// process that must never crash. The answer is cached per EngineInfo instance: it does not change while the
// installed MNN does not.
import { existsSync } from 'node:fs';
import { errorMessage } from '../../../lib/errors.js';
import { createLogger, type Logger } from '../../../lib/log.js';
import { addonCandidates, type EngineAvailability } from '../loader.js';
import { EngineHostClient } from './client.js';

export interface EngineInfoOptions {
  logger?: Logger;
  env?: NodeJS.ProcessEnv;
  /** Working directory of the probing host (MNN may create tmp_* there). */
  cwd?: string;
  startTimeoutMs?: number;
}

export interface EngineInfo {
  /** The availability of the engine (with RuntimeInfo when available); probes once, then answers from cache. */
  (): Promise<EngineAvailability>;
  /** Forget the cached answer (after an engine update). */
  invalidate(): void;
}

/** Spawns a host, asks `runtime-info`, closes it. Never throws: a host that cannot start is a reason. */
export async function probeEngineInfo(options: EngineInfoOptions = {}): Promise<EngineAvailability> {
  const env = options.env ?? process.env;
  const candidates = addonCandidates(env);
  // Without an addon file there is nothing a child could load; say so without starting one.
  if (!candidates.some((p) => existsSync(p))) {
    return {
      available: false,
      reason: `the engine addon is not built (looked for ${candidates.join(', ')}; the build is skipped when no MNN install is found)`,
    };
  }
  let host: EngineHostClient | undefined;
  try {
    host = await EngineHostClient.start({
      name: 'engine-info',
      logger: options.logger ?? createLogger(),
      env,
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
    });
    return await host.runtimeInfo();
  } catch (err) {
    return {
      available: false,
      reason: `the engine host could not report MNN's runtime info (${errorMessage(err)})`,
    };
  } finally {
    await host?.close();
  }
}

/** A cached probe; concurrent callers share one host. */
export function createEngineInfo(options: EngineInfoOptions = {}): EngineInfo {
  let cached: Promise<EngineAvailability> | undefined;
  const info = (() => {
    cached ??= probeEngineInfo(options);
    return cached;
  }) as EngineInfo;
  info.invalidate = () => {
    cached = undefined;
  };
  return info;
}
