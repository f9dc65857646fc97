import { MnnEdgeError } from '../../lib/errors.js';
import type {
  ActivationOutcome,
  ActivationPort,
  HealthProbe,
  ProbeRequest,
  ProbeResult,
} from '../../lib/ota-ports.js';
import type { SlotName } from '../plan/types.js';
import { EngineFailure } from './engine/engine-port.js';
import type { Runtime } from './runtime.js';

// OTA's activation and health-probe ports over the runtime: an OTA job activates a model version through the
// desired state's OTA source (hot-swapped like any other change) and probes what actually serves. The port
// types are defined once in lib/ota-ports.ts, which OTA's job runner also imports, so the runtime imports
// nothing from ota/ and the two cannot drift apart.

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

/** Enabled slots configured to use this model; an OTA version of a model none uses has nothing to serve. */
function slotsUsing(runtime: Runtime, modelId: string): SlotName[] {
  return runtime
    .document()
    .slots.filter((s) => s.config?.enabled && 'model' in s.config.use && s.config.use.model.id === modelId)
    .map((s) => s.slot);
}

async function converge(
  runtime: Runtime,
  modelId: string,
  version: string | undefined,
  what: string,
): Promise<ActivationOutcome> {
  await runtime.settled();
  if (version === undefined) return { serving: true };
  if (slotsUsing(runtime, modelId).length === 0)
    return { serving: false, why: `no enabled slot uses ${modelId} yet` };
  const versions = servingVersions(runtime, modelId);
  const behind = [...versions].filter(([, v]) => v !== version);
  if (versions.size > 0 && behind.length === 0) return { serving: true };
  const failure = runtime
    .state()
    .failures.filter((f) => f.key.startsWith(`${modelId}@${version}/`))
    .sort((a, b) => b.lastAtMs - a.lastAtMs)[0];
  // A slot wants the model but the planner placed it nowhere (too big for the memory budget, say).
  const why =
    versions.size === 0
      ? (runtime
          .state()
          .placement?.slots.find((s) => s.reasons.some((r) => r.includes(modelId)))
          ?.reasons.join('; ') ?? `the planner placed ${modelId} in no slot`)
      : (failure?.reason ?? `${behind.map(([s, v]) => `${s} serves ${v ?? 'nothing'}`).join(', ')}`);
  throw new MnnEdgeError('EACTIVATE', `${what} ${modelId}@${version} did not take effect: ${why}`);
}

/** The model store's rollback hold, handed to the port so that it holds versions without a call through compose. */
export interface RollbackHold {
  /** Keeps these versions on disk whatever GC decides. Each call names the whole set, replacing the previous one. */
  setRollbackHold(refs: { id: string; version: string }[]): void;
}

export interface ActivationPortOptions {
  /** Where the version serving before a job is held until the job commits or rolls back (the model store). */
  rollbackHold?: RollbackHold;
}

/**
 * OTA activation through the runtime. Between activate() and commit() the version that served before is held
 * for rollback: the runtime's in-use set names only the new version by then, so without the hold a GC during
 * the health check could delete the very version a failed gate must go back to.
 */
export function runtimeActivationPort(runtime: Runtime, options: ActivationPortOptions = {}): ActivationPort {
  // One job runs at a time, but the holds are kept per model so that a port shared by several jobs never
  // drops another model's hold when it replaces the set.
  const held = new Map<string, string>();
  // A release always rewrites the set, even for a model this port never held: after a restart the hold a job
  // placed before the crash is on disk only, and its commit or rollback must still clear it.
  const setHold = (modelId: string, version: string | undefined) => {
    if (version === undefined) held.delete(modelId);
    else if (held.get(modelId) === version) return;
    else held.set(modelId, version);
    options.rollbackHold?.setRollbackHold([...held].map(([id, v]) => ({ id, version: v })));
  };
  const activeVersion = async (modelId: string) =>
    [...servingVersions(runtime, modelId).values()].find((v): v is string => v !== undefined);
  return {
    activeVersion,
    async activate(modelId, version, jobId, previous) {
      // Held before the switch, so a crash between the two never leaves the old version unprotected. `previous`
      // is the job's (journaled before the first activation), so a resumed activation holds the same version.
      if (previous !== undefined && previous !== version) setHold(modelId, previous);
      await runtime.setModelVersion(modelId, version, jobId);
      return converge(runtime, modelId, version, 'activating');
    },
    async rollback(modelId, version, jobId) {
      if (version === undefined) await runtime.clearModelVersion(modelId, jobId);
      else await runtime.setModelVersion(modelId, version, jobId, 'rollback');
      // Released only once the old version serves again (the in-use set protects it from then on); a failed
      // rollback keeps the hold so that nothing removes the version an operator will want back.
      await converge(runtime, modelId, version, 'rolling back to');
      setHold(modelId, undefined);
    },
    async commit(modelId) {
      // The previous version becomes an ordinary old version: kept until GC needs the space.
      setHold(modelId, undefined);
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
        for await (const ev of runtime.serving.stream(
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
