import type { BuiltinName, Candidate, Placement, SlotName } from '../../plan/types.js';
import type { InstanceStatus } from '../desired/types.js';
import type { LoadSplit } from '../engine/load-split.js';

// One answer to "can this slot serve, and if not, why": derived from what the planner decided, what the runtime
// runs, what failed and whether the engine exists. The dashboard, the overview's health, /v1/models and the
// fleet's documents all read this one model, so none of them can call a slot healthy that another calls broken.

/**
 * planned → loading → serving, or degraded (runs, but not the planner's best: short of memory) or fallback (runs
 * an alternative because the first choice failed); failed when nothing runs and the reason is known.
 * builtin and disabled are the two slots without a model.
 */
export type SlotPhase =
  | 'planned'
  | 'loading'
  | 'serving'
  | 'degraded'
  | 'fallback'
  | 'failed'
  | 'builtin'
  | 'disabled';

/** A model as a person reads it: no planner keys. */
export interface SlotModelView {
  id: string;
  version: string;
  variant: string;
  backend: string;
  threads: number;
  /** "tiny-llm@1.0.0 (cpu-fp32) on CPU, 4 threads" */
  label: string;
}

export interface SlotState {
  slot: SlotName;
  phase: SlotPhase;
  /** A request on this slot can be answered now (by a model or a built-in). */
  servable: boolean;
  /** One sentence saying what the slot does now, or what stops it. */
  summary: string;
  /** Why it is not serving (failed, planned, loading) or not at its best (degraded, fallback). */
  reason?: string;
  /** What the planner chose for the slot. */
  planned?: SlotModelView;
  /** What actually answers requests now: differs from `planned` on a fallback. */
  servedBy?: SlotModelView;
  builtin?: BuiltinName;
  /** The planner's reasons, with their numbers (speed, memory, threads), for the "Why" column. */
  why: string[];
  /** Where the serving instance's start went (host start, read, MNN's load, warm-up), once it serves. */
  loadSplit?: LoadSplit;
  /** While loading again after failed loads of the same candidate: how many failed. */
  retryAfterFailures?: number;
}

export interface SlotStateInput {
  placement: Placement | undefined;
  /** Slots named in the configuration; a slot configured but absent from the placement is still planned. */
  configured?: readonly SlotName[];
  /** Slot → key of the instance serving it now. */
  serving: Partial<Record<SlotName, string>>;
  instances: ReadonlyArray<{ key: string; status: InstanceStatus; loadSplit?: LoadSplit }>;
  /** The runtime's choice per planned instance: which candidate runs, and why when it is a fallback. */
  active: ReadonlyArray<{ plannedKey: string; active: Candidate; fallback?: { reason: string } }>;
  /** Recent failures by candidate key. */
  failures: ReadonlyArray<{ key: string; reason: string; count: number }>;
  engine: { available: true } | { available: false; reason: string };
  /** The reconcile loop's last error, for a slot that failed without a recorded candidate failure. */
  lastError?: string | undefined;
}

const BACKEND_NAMES: Record<string, string> = {
  cpu: 'CPU',
  opencl: 'OpenCL',
  vulkan: 'Vulkan',
  cuda: 'CUDA',
  metal: 'Metal',
  npu: 'NPU',
  hexagon: 'Hexagon',
};

export function backendName(backend: string): string {
  return BACKEND_NAMES[backend] ?? backend;
}

export function modelView(c: Candidate): SlotModelView {
  const threads = c.config.thread_num;
  const onCpu = c.config.backend_type === 'cpu';
  return {
    id: c.modelId,
    version: c.version,
    variant: c.variantId,
    backend: c.config.backend_type,
    threads,
    label:
      `${c.modelId}@${c.version} (${c.variantId}) on ${backendName(c.config.backend_type)}` +
      (onCpu ? `, ${threads} thread${threads === 1 ? '' : 's'}` : ''),
  };
}

const LOADING: ReadonlySet<InstanceStatus> = new Set(['starting', 'loading', 'warming']);

/** `model@version/variant|config`: the planner's key, which error texts from the runtime may start with. */
const PLANNER_KEY = /([\w.-]+@[\w.+-]+)\/([\w.-]+)\|\w+ t\d+ p:\w+ m:\w+ cpus:[\w,.-]+/g;

function sentence(text: string): string {
  const t = text.replace(PLANNER_KEY, '$1 ($2)').trim();
  if (t.length === 0) return t;
  // A plain leading word is capitalised; a model id ("tiny-llm@1.0.0") or a path is left as it is written.
  const first = /^[a-z]+[\s:,]/.test(t) ? t[0]!.toUpperCase() + t.slice(1) : t;
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

export function slotStates(input: SlotStateInput): SlotState[] {
  const out = new Map<SlotName, SlotState>();
  const placement = input.placement;
  for (const p of placement?.slots ?? []) {
    if (p.status === 'disabled') {
      out.set(p.slot, {
        slot: p.slot,
        phase: 'disabled',
        servable: false,
        summary: 'Switched off in the configuration.',
        why: p.reasons,
      });
      continue;
    }
    if (p.status === 'builtin') {
      out.set(p.slot, {
        slot: p.slot,
        phase: 'builtin',
        servable: true,
        summary: `Served by the built-in ${p.builtin ?? 'implementation'}, inside the agent (no model, no engine).`,
        ...(p.builtin ? { builtin: p.builtin } : {}),
        why: p.reasons,
      });
      continue;
    }
    const instance = placement?.instances.find((i) => i.key === p.instanceKey);
    if (p.status === 'unloaded' || instance === undefined) {
      const reason = sentence(p.reasons.join('; ') || 'the planner found no way to run it here');
      out.set(p.slot, {
        slot: p.slot,
        phase: 'failed',
        servable: false,
        summary: `Cannot be placed: ${reason}`,
        reason,
        why: p.reasons,
      });
      continue;
    }
    out.set(p.slot, engineSlot(p.slot, p.status === 'degraded', p.reasons, instance, input));
  }
  for (const slot of input.configured ?? []) {
    if (out.has(slot)) continue;
    const reason = input.engine.available
      ? 'The runtime has not placed it yet.'
      : sentence(input.engine.reason);
    out.set(slot, {
      slot,
      phase: input.engine.available ? 'planned' : 'failed',
      servable: false,
      summary: input.engine.available ? 'Waiting for the first placement.' : `Cannot run: ${reason}`,
      reason,
      why: [],
    });
  }
  return [...out.values()];
}

function engineSlot(
  slot: SlotName,
  degraded: boolean,
  slotReasons: readonly string[],
  instance: Placement['instances'][number],
  input: SlotStateInput,
): SlotState {
  const planned = modelView(instance.chosen);
  const choice = input.active.find((a) => a.plannedKey === instance.key);
  const activeKey = input.serving[slot] ?? choice?.active.key ?? instance.key;
  const activeCandidate =
    [instance.chosen, ...instance.fallback].find((c) => c.key === activeKey) ??
    choice?.active ??
    instance.chosen;
  const running = input.instances.find((i) => i.key === activeKey);
  // The planner's slot-level extras (degraded), without the "served by <key>" line a person cannot read.
  const extra = slotReasons.filter((r) => !r.startsWith('served by '));
  const why = [...instance.reasons, ...extra.filter((r) => !instance.reasons.includes(r))];
  const base = { slot, planned, why };

  if (input.serving[slot] !== undefined && running?.status === 'ready') {
    const servedBy = modelView(activeCandidate);
    const serving = { ...base, ...(running.loadSplit ? { loadSplit: running.loadSplit } : {}) };
    if (activeKey !== instance.key) {
      const reason = sentence(
        `${planned.label} failed (${choice?.fallback?.reason ?? 'see the log'}), so ${servedBy.label} runs instead`,
      );
      return {
        ...serving,
        phase: 'fallback',
        servable: true,
        servedBy,
        summary: `Serving ${servedBy.label} as a fallback.`,
        reason,
      };
    }
    if (degraded) {
      const reason = sentence(
        extra.find((r) => r.startsWith('degraded')) ?? 'not the best choice for this board',
      );
      return {
        ...serving,
        phase: 'degraded',
        servable: true,
        servedBy,
        summary: `Serving ${servedBy.label}.`,
        reason,
      };
    }
    return { ...serving, phase: 'serving', servable: true, servedBy, summary: `Serving ${servedBy.label}.` };
  }
  if (!input.engine.available) {
    const reason = sentence(input.engine.reason);
    return {
      ...base,
      phase: 'failed',
      servable: false,
      summary: `Planned ${planned.label}, but it cannot run.`,
      reason,
    };
  }
  const failure =
    input.failures.find((f) => f.key === activeKey) ?? input.failures.find((f) => f.key === instance.key);
  if (running && LOADING.has(running.status)) {
    return {
      ...base,
      phase: 'loading',
      servable: false,
      summary: `Loading ${modelView(activeCandidate).label} (${running.status}).`,
      ...(failure ? { retryAfterFailures: failure.count } : {}),
      // A retry after failures says what failed last, so a page that catches it mid-retry is not misled.
      reason: failure
        ? sentence(
            `retrying after ${failure.count} failed attempt${failure.count === 1 ? '' : 's'}: ${failure.reason}`,
          )
        : 'Requests wait until the model has loaded and answered its warm-up.',
    };
  }
  if (failure || running?.status === 'failed' || input.lastError) {
    const what = failure?.reason ?? input.lastError ?? 'its engine host failed';
    const times = failure && failure.count > 1 ? ` (${failure.count} attempts)` : '';
    return {
      ...base,
      phase: 'failed',
      servable: false,
      summary: `Planned ${planned.label}, but it failed to load${times}.`,
      reason: sentence(what),
    };
  }
  return {
    ...base,
    phase: 'planned',
    servable: false,
    summary: `Planned ${planned.label}; the runtime has not started it yet.`,
    reason: 'Waiting for the runtime to start its engine host.',
  };
}

/** The overall verdict: never healthy while a configured slot cannot serve. One line per problem. */
export function slotProblems(states: readonly SlotState[]): string[] {
  return states
    .filter((s) => !s.servable && s.phase !== 'disabled')
    .map(
      (s) =>
        `slot ${s.slot} ${s.phase === 'loading' ? 'is still loading' : 'cannot serve'}: ${s.reason ?? s.summary}`,
    );
}

/** The runtime facts slotStates needs: its state, the configured slots, and whether the engine exists. */
export interface SlotStateSource {
  state(): {
    placement: Placement | undefined;
    serving: Partial<Record<SlotName, string>>;
    instances: SlotStateInput['instances'];
    active: SlotStateInput['active'];
    failures: SlotStateInput['failures'];
    health: { lastError: string | undefined };
  };
  document(): { slots: ReadonlyArray<{ slot: SlotName; config: unknown }> };
  readonly engineUnavailableReason: string | undefined;
}

/** Every configured slot's state, read from a running runtime. */
export function runtimeSlotStates(runtime: SlotStateSource): SlotState[] {
  const s = runtime.state();
  const unavailable = runtime.engineUnavailableReason;
  return slotStates({
    placement: s.placement,
    configured: runtime
      .document()
      .slots.filter((d) => d.config !== undefined)
      .map((d) => d.slot),
    serving: s.serving,
    instances: s.instances,
    active: s.active,
    failures: s.failures,
    engine: unavailable === undefined ? { available: true } : { available: false, reason: unavailable },
    lastError: s.health.lastError,
  });
}

/**
 * The runtime's part of the overview's health: the reconcile loop's own verdict plus one line per configured
 * slot that cannot serve. Healthy only when both are clean.
 */
export function runtimeHealth(
  runtime: SlotStateSource & {
    health(): { healthy: boolean; reason: string; lastError: string | undefined };
  },
): { healthy: boolean; problems: string[] } {
  const loop = runtime.health();
  const slots = slotProblems(runtimeSlotStates(runtime));
  // A loop failing for the reason a slot already gives (the engine is missing) would say the same thing twice.
  const repeated =
    loop.lastError !== undefined && slots.some((p) => p.includes(loop.lastError!.slice(0, 60)));
  const problems = [...(loop.healthy || repeated ? [] : [`runtime: ${loop.reason}`]), ...slots];
  return { healthy: problems.length === 0, problems };
}
