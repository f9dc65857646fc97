import type { Candidate, ModelKind, Placement } from '../../plan/types.js';
import type { InstanceSpec } from '../engine/engine-port.js';
import type { FailureBook } from './failures.js';
import type { ActiveChoice, TargetState } from './types.js';

/** The catalog's kind of a model version (the planner's candidates do not carry it). */
export type KindOf = (modelId: string, version: string) => ModelKind | undefined;

export function specOf(c: Candidate, kindOf: KindOf = () => undefined): InstanceSpec {
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
    ...(c.conversations ? { conversations: c.conversations } : {}),
  };
}

/**
 * What should run now: per planned instance the first candidate of its chain that is not blocked by a recent
 * failure. The last candidate (the CPU floor) is used even when blocked: a slot is never left without a way to
 * run only because everything failed once; the runner's own backoff paces those retries.
 */
export function activeTarget(
  placement: Placement,
  failures: FailureBook,
  kindOf: KindOf = () => undefined,
): { target: TargetState; choices: ActiveChoice[] } {
  const instances = new Map<string, InstanceSpec>();
  const serving: TargetState['serving'] = {};
  const choices: ActiveChoice[] = [];
  for (const inst of placement.instances) {
    const chain = [inst.chosen, ...inst.fallback];
    const active = chain.find((c) => failures.blocked(c.key) === undefined) ?? chain[chain.length - 1]!;
    const choice: ActiveChoice = { plannedKey: inst.key, active, slots: inst.slots };
    if (active !== inst.chosen) {
      const rec = failures.blocked(inst.chosen.key) ?? failures.get(inst.chosen.key);
      if (rec) choice.fallback = { fromKey: inst.chosen.key, reason: rec.reason, retryAtMs: rec.retryAtMs };
    }
    choices.push(choice);
    instances.set(active.key, specOf(active, kindOf));
    for (const s of inst.slots) serving[s] = active.key;
  }
  return { target: { instances: [...instances.values()], serving }, choices };
}
