const BACKEND_NAMES = {
    cpu: 'CPU',
    opencl: 'OpenCL',
    vulkan: 'Vulkan',
    cuda: 'CUDA',
    metal: 'Metal',
    npu: 'NPU',
    hexagon: 'Hexagon',
};
export function backendName(backend) {
    return BACKEND_NAMES[backend] ?? backend;
}
export function modelView(c) {
    const threads = c.config.thread_num;
    const onCpu = c.config.backend_type === 'cpu';
    return {
        id: c.modelId,
        version: c.version,
        variant: c.variantId,
        backend: c.config.backend_type,
        threads,
        label: `${c.modelId}@${c.version} (${c.variantId}) on ${backendName(c.config.backend_type)}` +
            (onCpu ? `, ${threads} thread${threads === 1 ? '' : 's'}` : ''),
    };
}
const LOADING = new Set(['starting', 'loading', 'warming']);
/** `model@version/variant|config`: the planner's key, which error texts from the runtime may start with. */
const PLANNER_KEY = /([\w.-]+@[\w.+-]+)\/([\w.-]+)\|\w+ t\d+ p:\w+ m:\w+ cpus:[\w,.-]+/g;
function sentence(text) {
    const t = text.replace(PLANNER_KEY, '$1 ($2)').trim();
    if (t.length === 0)
        return t;
    // A plain leading word is capitalised; a model id ("tiny-llm@1.0.0") or a path is left as it is written.
    const first = /^[a-z]+[\s:,]/.test(t) ? t[0].toUpperCase() + t.slice(1) : t;
    return /[.!?]$/.test(first) ? first : `${first}.`;
}
export function slotStates(input) {
    const out = new Map();
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
        if (out.has(slot))
            continue;
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
function engineSlot(slot, degraded, slotReasons, instance, input) {
    const planned = modelView(instance.chosen);
    const choice = input.active.find((a) => a.plannedKey === instance.key);
    const activeKey = input.serving[slot] ?? choice?.active.key ?? instance.key;
    const activeCandidate = [instance.chosen, ...instance.fallback].find((c) => c.key === activeKey) ??
        choice?.active ??
        instance.chosen;
    const running = input.instances.find((i) => i.key === activeKey);
    // The planner's slot-level extras (degraded), without the "served by <key>" line a person cannot read.
    const extra = slotReasons.filter((r) => !r.startsWith('served by '));
    const why = [...instance.reasons, ...extra.filter((r) => !instance.reasons.includes(r))];
    const base = { slot, planned, why };
    if (input.serving[slot] !== undefined && running?.status === 'ready') {
        const servedBy = modelView(activeCandidate);
        const serving = { ...base, ...(running.load ? { load: running.load } : {}) };
        if (activeKey !== instance.key) {
            const reason = sentence(`${planned.label} failed (${choice?.fallback?.reason ?? 'see the log'}), so ${servedBy.label} runs instead`);
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
            const reason = sentence(extra.find((r) => r.startsWith('degraded')) ?? 'not the best choice for this board');
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
    const failure = input.failures.find((f) => f.key === activeKey) ?? input.failures.find((f) => f.key === instance.key);
    if (running && LOADING.has(running.status)) {
        return {
            ...base,
            phase: 'loading',
            servable: false,
            summary: `Loading ${modelView(activeCandidate).label} (${running.status}).`,
            // A retry after failures says what failed last, so a page that catches it mid-retry is not misled.
            reason: failure
                ? sentence(`retrying after ${failure.count} failed attempt${failure.count === 1 ? '' : 's'}: ${failure.reason}`)
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
export function slotProblems(states) {
    return states
        .filter((s) => !s.servable && s.phase !== 'disabled')
        .map((s) => `slot ${s.slot} ${s.phase === 'loading' ? 'is still loading' : 'cannot serve'}: ${s.reason ?? s.summary}`);
}
/** Every configured slot's state, read from a running runtime. */
export function runtimeSlotStates(runtime) {
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
export function runtimeHealth(runtime) {
    const loop = runtime.health();
    const slots = slotProblems(runtimeSlotStates(runtime));
    // A loop failing for the reason a slot already gives (the engine is missing) would say the same thing twice.
    const repeated = loop.lastError !== undefined && slots.some((p) => p.includes(loop.lastError.slice(0, 60)));
    const problems = [...(loop.healthy || repeated ? [] : [`runtime: ${loop.reason}`]), ...slots];
    return { healthy: problems.length === 0, problems };
}
//# sourceMappingURL=slot-states.js.map