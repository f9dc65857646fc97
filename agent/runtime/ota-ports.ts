import type { ActivationPort, HealthProbe, ProbeRequest, ProbeResult } from '../../ota/ports.js';
import { MnnEdgeError } from '../common/errors.js';
import type { SlotName } from '../plan/types.js';
import { EngineFailure } from './engine-port.js';
import type { Runtime } from './runtime.js';

// OTA's activation and health-probe ports over the runtime: an OTA job activates a model version through the
// desired state's OTA layer (hot-swapped like any other change) and probes what actually serves.

/** Slots the planner gave to this model, and the version serving each now. */
function servingVersions(runtime: Runtime, modelId: string): Map<SlotName, string | undefined> {
  const state = runtime.state();
  const out = new Map<SlotName, string | undefined>();
  for (const inst of state.placement?.instances ?? []) {
    if (inst.chosen.modelId !== modelId) continue;
    for (const slot of inst.slots) {
      const serving = state.instances.find((i) => i.key === state.serving[slot]);
      out.set(slot, serving?.modelId === modelId ? serving.version : undefined);
    }
  }
  return out;
}

async function converge(runtime: Runtime, modelId: string, version: string | undefined, what: string) {
  await runtime.settled();
  const versions = servingVersions(runtime, modelId);
  if (version === undefined) return;
  const behind = [...versions].filter(([, v]) => v !== version);
  if (versions.size > 0 && behind.length === 0) return;
  const failure = runtime
    .state()
    .failures.filter((f) => f.key.startsWith(`${modelId}@${version}/`))
    .sort((a, b) => b.lastAtMs - a.lastAtMs)[0];
  const why =
    versions.size === 0
      ? (runtime
          .state()
          .placement?.slots.find((s) => s.reasons.some((r) => r.includes(modelId)))
          ?.reasons.join('; ') ?? 'no slot uses this model')
      : (failure?.reason ?? `${behind.map(([s, v]) => `${s} serves ${v ?? 'nothing'}`).join(', ')}`);
  throw new MnnEdgeError('EACTIVATE', `${what} ${modelId}@${version} did not take effect: ${why}`);
}

export function runtimeActivationPort(runtime: Runtime, author = 'ota'): ActivationPort {
  return {
    async activeVersion(modelId) {
      const versions = [...servingVersions(runtime, modelId).values()].filter(
        (v): v is string => v !== undefined,
      );
      return versions[0];
    },
    async activate(modelId, version) {
      await runtime.setModelVersion(modelId, version, author);
      await converge(runtime, modelId, version, 'activating');
    },
    async rollback(modelId, version) {
      if (version === undefined) await runtime.clearModelVersion(modelId, author);
      else await runtime.setModelVersion(modelId, version, `${author}:rollback`);
      await converge(runtime, modelId, version, 'rolling back to');
    },
    async commit() {
      // The OTA layer already holds the version; the placement's inUse hook keeps it from GC.
    },
  };
}

export function runtimeHealthProbe(runtime: Runtime): HealthProbe {
  return {
    async measure(request: ProbeRequest): Promise<ProbeResult> {
      const slot = [...servingVersions(runtime, request.modelId)].find(([, v]) => v === request.version)?.[0];
      if (!slot)
        throw new MnnEdgeError(
          'EUNSERVED',
          `${request.modelId}@${request.version} is not serving any slot; nothing to probe`,
        );
      const signal = AbortSignal.timeout(request.timeoutMs);
      const t0 = performance.now();
      let ttftMs: number | undefined;
      let text = '';
      let decodeTokensPerSecond = 0;
      try {
        for await (const ev of runtime.stream(
          slot,
          {
            prompt: request.prompt,
            maxNewTokens: request.maxNewTokens,
            ...(request.image ? { images: [request.image] } : {}),
          },
          signal,
        )) {
          if (ev.type === 'text') {
            ttftMs ??= performance.now() - t0;
            text += ev.text;
          } else if (ev.stats.decodeMs > 0) {
            decodeTokensPerSecond = ev.stats.decodeTokens / (ev.stats.decodeMs / 1000);
          }
        }
      } catch (err) {
        if (signal.aborted && !(err instanceof EngineFailure && err.kind !== 'cancelled'))
          throw new MnnEdgeError(
            'ETIMEDOUT',
            `health probe of ${request.modelId}@${request.version} took longer than ${request.timeoutMs} ms`,
          );
        throw err;
      }
      return { ttftMs: ttftMs ?? performance.now() - t0, decodeTokensPerSecond, text };
    },
  };
}
