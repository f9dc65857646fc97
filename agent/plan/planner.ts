import { enumerateCandidates, type Rejected } from './candidates.js';
import { memoryBudget, mib } from './memory.js';
import { chooseThreads } from './threads.js';
import {
  type Candidate,
  type CatalogModel,
  type InstancePlacement,
  type Placement,
  type PlanInput,
  SLOT_NAMES,
  type SlotConstraints,
  type SlotName,
  type SlotPlacement,
  type SlotSpec,
} from './types.js';
import { compareVersions } from './version.js';

interface Group {
  model: CatalogModel;
  constraints: SlotConstraints;
  slots: SlotSpec[];
  priority: number;
  contextTokens: number;
}

function slotOrder(a: SlotName, b: SlotName): number {
  return SLOT_NAMES.indexOf(a) - SLOT_NAMES.indexOf(b);
}

/** Which installed model a slot gets: a version forced by a higher layer (OTA job, operator), else the one the
 *  config names, else the newest installed. */
function resolveModel(
  spec: SlotSpec & { use: { model: { id: string; version?: string } } },
  constraints: SlotConstraints,
  input: PlanInput,
): CatalogModel | string {
  const id = spec.use.model.id;
  const installed = input.catalog.models.filter((m) => m.id === id);
  if (installed.length === 0) return `model ${id} is not installed`;
  const version = constraints.version ?? spec.use.model.version;
  if (version !== undefined) {
    const found = installed.find((m) => m.version === version);
    return (
      found ??
      `version ${version} of ${id} is not installed (installed: ${installed.map((m) => m.version).join(', ')})`
    );
  }
  return [...installed].sort((a, b) => compareVersions(b.version, a.version))[0]!;
}

function groupKey(model: CatalogModel, c: SlotConstraints): string {
  return [model.id, model.version, c.variant, c.backend, c.threads, c.precision, c.memory]
    .map((v) => v ?? '*')
    .join('|');
}

function explainMemory(c: Candidate, group: Group, overheadBytes: number, leftBytes: number): string {
  const variant = group.model.variants.find((v) => v.variantId === c.variantId);
  const kvPerToken = variant?.kvBytesPerToken ?? 0;
  const kv = kvPerToken * group.contextTokens;
  const snapshots = c.conversations
    ? ` + conversation snapshots ${mib(c.conversations.budgetBytes)} (up to ${c.conversations.max - 1} more conversations' KV)`
    : '';
  return (
    `memory ${mib(c.memoryBytes)} = weights ${mib(variant?.weightBytes ?? 0)} + KV cache ` +
    `${group.contextTokens} tokens × ${(kvPerToken / 1024).toFixed(1)} KiB = ${mib(kv)} + engine ${mib(overheadBytes)}` +
    `${snapshots}; ${mib(leftBytes)} of the budget left`
  );
}

/** "chosen by measurement: cpu decode 31.0 tok/s vs vulkan 9.4 tok/s" when another backend was measured too. */
function measuredComparison(chosen: Candidate, candidates: readonly Candidate[]): string | undefined {
  if (chosen.evidence.kind !== 'measured') return undefined;
  const mine = chosen.evidence.probe;
  const others = candidates.filter(
    (c) =>
      c !== chosen && c.evidence.kind === 'measured' && c.config.backend_type !== chosen.config.backend_type,
  );
  if (others.length === 0) return undefined;
  const parts = others.map((o) => {
    const p = (o.evidence as Extract<Candidate['evidence'], { kind: 'measured' }>).probe;
    return `${o.config.backend_type} ${p.decodeTokPerSec.toFixed(1)} tok/s decode, ${p.prefillTokPerSec.toFixed(1)} tok/s prefill`;
  });
  return (
    `chosen by measurement: ${chosen.config.backend_type} ${mine.decodeTokPerSec.toFixed(1)} tok/s decode, ` +
    `${mine.prefillTokPerSec.toFixed(1)} tok/s prefill vs ${parts.join('; ')}`
  );
}

function fallbackChain(
  ranked: readonly Candidate[],
  chosen: Candidate,
  maxChain: number,
  alternates: readonly Candidate[],
): Candidate[] {
  const fits = ranked.filter((c) => c !== chosen && c.memoryBytes <= chosen.memoryBytes);
  const chain = fits.slice(0, maxChain);
  // The CPU is the floor every chain ends on: keep one CPU candidate even when the chain was cut short.
  const hasCpu = chosen.config.backend_type === 'cpu' || chain.some((c) => c.config.backend_type === 'cpu');
  const cpu = fits.find((c) => c.config.backend_type === 'cpu');
  if (!hasCpu && cpu) chain.splice(Math.min(chain.length, maxChain - 1), 1, cpu);
  // On a CPU with fp16 arithmetic the floor's other precision comes after it (beyond maxChain): an fp16 (Arm82)
  // failure then ends on the fp32 kernels instead of retrying fp16 forever.
  const floor = [chosen, ...chain].reverse().find((c) => c.config.backend_type === 'cpu');
  const other = floor && alternates.find((a) => a.variantId === floor.variantId);
  if (other && other.memoryBytes <= chosen.memoryBytes) chain.push(other);
  return chain;
}

type SlotPlacements = Map<SlotName, SlotPlacement>;

/**
 * Slots that ask for the same model under the same constraints form one group (one instance serves them all);
 * disabled, built-in and unresolvable slots are settled here and form none.
 */
function groupSlots(input: PlanInput, slotPlacements: SlotPlacements): Group[] {
  const groups = new Map<string, Group>();
  for (const spec of [...input.slots].sort((a, b) => slotOrder(a.slot, b.slot))) {
    if (!spec.enabled) {
      slotPlacements.set(spec.slot, { slot: spec.slot, status: 'disabled', reasons: ['disabled in config'] });
      continue;
    }
    if ('builtin' in spec.use) {
      slotPlacements.set(spec.slot, {
        slot: spec.slot,
        status: 'builtin',
        builtin: spec.use.builtin,
        reasons: [`built-in ${spec.use.builtin}: runs in the agent, no model and no engine host`],
      });
      continue;
    }
    const forced = input.constraints[spec.slot] ?? {};
    const constraints: SlotConstraints = { ...forced };
    if (constraints.variant === undefined && spec.use.model.variant !== undefined)
      constraints.variant = spec.use.model.variant;
    const model = resolveModel(spec as SlotSpec & { use: { model: { id: string } } }, constraints, input);
    if (typeof model === 'string') {
      slotPlacements.set(spec.slot, { slot: spec.slot, status: 'unloaded', reasons: [model] });
      continue;
    }
    const key = groupKey(model, constraints);
    const group = groups.get(key);
    if (group) {
      group.slots.push(spec);
      group.priority = Math.max(group.priority, spec.priority);
      group.contextTokens = Math.max(group.contextTokens, spec.contextTokens);
    } else {
      groups.set(key, {
        model,
        constraints,
        slots: [spec],
        priority: spec.priority,
        contextTokens: spec.contextTokens,
      });
    }
  }
  // Highest priority first: it gets the memory budget before the others.
  return [...groups.values()].sort(
    (a, b) => b.priority - a.priority || slotOrder(a.slots[0]!.slot, b.slots[0]!.slot),
  );
}

/** Why this candidate: its numbers against the next ones, the pins and threads that applied, the memory sum. */
function instanceReasons(
  chosen: Candidate,
  candidates: readonly Candidate[],
  group: Group,
  context: { input: PlanInput; remaining: number; threadsReason: string; rejectedText: string[] },
): string[] {
  const reasons: string[] = [`${chosen.variantId} on ${chosen.config.backend_type}: ${chosen.summary}`];
  if (chosen.precisionReason !== undefined) reasons.push(`precision: ${chosen.precisionReason}`);
  const byNumbers = measuredComparison(chosen, candidates);
  if (byNumbers) reasons.push(byNumbers);
  for (const other of candidates.slice(0, 4)) {
    if (other === chosen) continue;
    const cmp =
      other.refSeconds !== undefined && chosen.refSeconds !== undefined
        ? ` (reference request ${other.refSeconds.toFixed(2)} s vs ${chosen.refSeconds.toFixed(2)} s)`
        : '';
    reasons.push(`vs ${other.variantId} on ${other.config.backend_type}: ${other.summary}${cmp}`);
  }
  if (chosen.config.backend_type === 'cpu' && group.constraints.threads === undefined)
    reasons.push(context.threadsReason);
  if (group.constraints.backend && chosen.config.backend_type === group.constraints.backend)
    reasons.push(`backend ${group.constraints.backend} pinned`);
  reasons.push(explainMemory(chosen, group, context.input.policy.instanceOverheadBytes, context.remaining));
  reasons.push(...context.rejectedText);
  return reasons;
}

/** What placing the groups in priority order has settled so far. */
interface PlacingState {
  readonly input: PlanInput;
  readonly budgetBytes: number;
  remaining: number;
  readonly instances: InstancePlacement[];
  readonly slotPlacements: SlotPlacements;
  readonly threadsReason: string;
}

/** One group: its best candidate that fits what is left, shared with an identical instance, or unloaded. */
function placeGroup(group: Group, state: PlacingState): void {
  const { input, instances, slotPlacements } = state;
  const slotNames = group.slots.map((s) => s.slot);
  const { candidates, rejected, alternates } = enumerateCandidates(group.model, group.constraints, {
    board: input.board,
    policy: input.policy,
    probes: input.probes,
    engineVersion: input.engineVersion,
    contextTokens: group.contextTokens,
  });
  const label = `${group.model.id}@${group.model.version}`;
  const rejectedText = rejected.map((r: Rejected) => `not ${r.what}: ${r.reason}`);
  if (candidates.length === 0) {
    for (const s of slotNames)
      slotPlacements.set(s, {
        slot: s,
        status: 'unloaded',
        reasons: [`no way to run ${label} here`, ...rejectedText],
      });
    return;
  }
  const best = candidates[0]!;
  // Different pins can land on the very same engine config (a pin that restates the default): one instance.
  const same = instances.find((i) => i.key === best.key);
  if (same) {
    same.slots.push(...slotNames);
    same.priority = Math.max(same.priority, group.priority);
    same.reasons.push(`shared by ${same.slots.join(', ')}: the same engine config, loaded once`);
    for (const s of slotNames)
      slotPlacements.set(s, {
        slot: s,
        status: 'placed',
        instanceKey: same.key,
        reasons: [`served by ${same.key}`],
      });
    return;
  }
  const chosen = candidates.find((c) => c.memoryBytes <= state.remaining);
  if (!chosen) {
    const smallest = Math.min(...candidates.map((c) => c.memoryBytes));
    const why =
      `${label} needs at least ${mib(smallest)} but only ${mib(state.remaining)} of the ${mib(state.budgetBytes)} ` +
      `budget is left after higher-priority slots`;
    for (const s of slotNames) slotPlacements.set(s, { slot: s, status: 'unloaded', reasons: [why] });
    return;
  }
  state.remaining -= chosen.memoryBytes;
  const reasons = instanceReasons(chosen, candidates, group, { ...state, rejectedText });
  const degraded =
    chosen === best
      ? undefined
      : `degraded: ${best.variantId} on ${best.config.backend_type} needs ${mib(best.memoryBytes)}, ` +
        `only ${mib(state.remaining + chosen.memoryBytes)} of the budget was left`;
  if (degraded) reasons.push(degraded);
  if (slotNames.length > 1) reasons.push(`shared by ${slotNames.join(', ')}: loaded once`);
  instances.push({
    key: chosen.key,
    chosen,
    fallback: fallbackChain(candidates, chosen, input.policy.maxChain, alternates),
    slots: slotNames,
    priority: group.priority,
    reasons,
  });
  for (const s of slotNames) {
    const slotReasons = [`served by ${chosen.key}`];
    if (degraded) slotReasons.push(degraded);
    slotPlacements.set(s, {
      slot: s,
      status: degraded ? 'degraded' : 'placed',
      instanceKey: chosen.key,
      reasons: slotReasons,
    });
  }
}

/**
 * Where every slot runs: per slot the instance (variant + MNN config) serving it, why, and what to fall back to.
 * Pure: the same inputs give the same placement, so a placement can be reproduced from the stored numbers.
 */
export function planPlacement(input: PlanInput): Placement {
  const base = memoryBudget(input.board, input.policy);
  const slotPlacements: SlotPlacements = new Map();
  const state: PlacingState = {
    input,
    budgetBytes: base.budgetBytes,
    remaining: base.budgetBytes,
    instances: [],
    slotPlacements,
    threadsReason: chooseThreads(input.board).reason,
  };
  for (const group of groupSlots(input, slotPlacements)) placeGroup(group, state);
  const plannedBytes = state.instances.reduce((sum, i) => sum + i.chosen.memoryBytes, 0);
  return {
    boardId: input.board.boardId,
    engineVersion: input.engineVersion,
    budget: { ...base, plannedBytes },
    slots: [...slotPlacements.values()].sort((a, b) => slotOrder(a.slot, b.slot)),
    instances: state.instances,
  };
}
