export function specOf(c, kindOf = () => undefined) {
    const kind = kindOf(c.modelId, c.version);
    return {
        key: c.key,
        modelId: c.modelId,
        version: c.version,
        variantId: c.variantId,
        ...(kind ? { kind } : {}),
        configPath: c.configPath,
        ...(c.configOverrides ? { configOverrides: c.configOverrides } : {}),
        config: c.config,
        memoryBytes: c.memoryBytes,
    };
}
/**
 * What should run now: per planned instance the first candidate of its chain that is not blocked by a recent
 * failure. The last candidate (the CPU floor) is used even when blocked: a slot is never left without a way to
 * run only because everything failed once; the runner's own backoff paces those retries.
 */
export function activeTarget(placement, failures, kindOf = () => undefined) {
    const instances = new Map();
    const serving = {};
    const choices = [];
    for (const inst of placement.instances) {
        const chain = [inst.chosen, ...inst.fallback];
        const active = chain.find((c) => failures.blocked(c.key) === undefined) ?? chain[chain.length - 1];
        const choice = { plannedKey: inst.key, active, slots: inst.slots };
        if (active !== inst.chosen) {
            const rec = failures.blocked(inst.chosen.key) ?? failures.get(inst.chosen.key);
            if (rec)
                choice.fallback = { fromKey: inst.chosen.key, reason: rec.reason, retryAtMs: rec.retryAtMs };
        }
        choices.push(choice);
        instances.set(active.key, specOf(active, kindOf));
        for (const s of inst.slots)
            serving[s] = active.key;
    }
    return { target: { instances: [...instances.values()], serving }, choices };
}
//# sourceMappingURL=target.js.map