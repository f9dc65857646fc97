import { planPlacement } from '../../plan/planner.js';
import type {
  ModelKind,
  Placement,
  PlanCatalog,
  PlanPolicy,
  SlotConstraints,
  SlotName,
  SlotSpec,
} from '../../plan/types.js';
import type { DesiredStateStore } from '../desired/desired-state.js';
import type { ProbeStore } from '../desired/probe-store.js';
import type { KindOf } from '../desired/target.js';
import type { SlotInfo } from '../desired/types.js';
import type { RuntimeCore } from './instance-table.js';

/**
 * The planner's call: the placement from the desired state's sources, the board, the catalog and the measured
 * probes, stored as a new revision and handed to the reconciler. Keeps the placement in memory: serving reads
 * it on every request.
 */
export class Planning {
  readonly #core: RuntimeCore;
  readonly #desired: DesiredStateStore;
  readonly #probes: ProbeStore;
  readonly #policy: PlanPolicy;
  #placement: Placement | undefined;
  /** Catalog kind per `id@version`, from the last plan: decides LLM or graph hosting. */
  #kinds = new Map<string, ModelKind>();
  /**
   * Slots unloaded on a client's request (Ollama's keep_alive) until their next use: planned as switched off,
   * but still described by the model they had, so callers keep offering it and the next request wakes it.
   * Not stored: a restart loads everything the configuration asks for, as it would without them.
   */
  readonly #parked = new Map<SlotName, Extract<SlotInfo, { status: 'placed' | 'degraded' }>>();
  readonly kindOf: KindOf = (id, version) => this.#kinds.get(`${id}@${version}`);

  constructor(core: RuntimeCore, desired: DesiredStateStore, probes: ProbeStore, policy: PlanPolicy) {
    this.#core = core;
    this.#desired = desired;
    this.#probes = probes;
    this.#policy = policy;
    this.#placement = desired.placement();
  }

  placement(): Placement | undefined {
    return this.#placement;
  }

  get policy(): PlanPolicy {
    return this.#policy;
  }

  /** What the current placement does with a slot, in terms a workload can explain to its user. */
  slotInfo(slot: SlotName): SlotInfo {
    const parked = this.#parked.get(slot);
    if (parked) return parked;
    const planned = this.#placement?.slots.find((s) => s.slot === slot);
    if (!planned) return { status: 'unconfigured' };
    if (planned.status === 'builtin' && planned.builtin)
      return { status: 'builtin', builtin: planned.builtin };
    if (planned.status === 'placed' || planned.status === 'degraded') {
      const chosen = this.#placement?.instances.find((i) => i.slots.includes(slot))?.chosen;
      if (chosen)
        return {
          status: planned.status,
          modelId: chosen.modelId,
          version: chosen.version,
          kind: this.kindOf(chosen.modelId, chosen.version),
        };
    }
    return { status: planned.status === 'disabled' ? 'disabled' : 'unloaded', reasons: planned.reasons };
  }

  /** Unloads the model serving the slot until its next use; false when no model serves it now. */
  async park(slot: SlotName, reason: string): Promise<boolean> {
    const info = this.slotInfo(slot);
    if (this.#parked.has(slot) || (info.status !== 'placed' && info.status !== 'degraded')) return false;
    this.#parked.set(slot, info);
    await this.replan(`${slot} unloaded: ${reason}`);
    return true;
  }

  /** Loads a parked slot's model again (its next request waits for the load); false when it was not parked. */
  async wake(slot: SlotName, reason: string): Promise<boolean> {
    if (!this.#parked.delete(slot)) return false;
    await this.replan(`${slot} loaded again: ${reason}`);
    return true;
  }

  isParked(slot: SlotName): boolean {
    return this.#parked.has(slot);
  }

  /** The context the configuration sized the slot's KV cache for, in tokens; undefined when not configured. */
  contextTokens(slot: SlotName): number | undefined {
    return this.#desired.configSlots().find((s) => s.slot === slot)?.contextTokens;
  }

  /** What a plan would be with these config slots, changing nothing (a settings change is checked with it). */
  async preview(slots: SlotSpec[]): Promise<Placement> {
    const { deps } = this.#core;
    const board = await deps.sources.board();
    const catalog = await deps.sources.catalog();
    const engineVersion = deps.hosts.engineVersion;
    return planPlacement({
      board,
      catalog,
      slots,
      constraints: this.#stickyVersions(slots, this.#desired.constraints(), catalog),
      probes: this.#probes.forBoard(board.boardId, engineVersion),
      engineVersion,
      policy: this.#policy,
    });
  }

  /** Plan again from the stored sources, the board, the catalog and the measurements; then reconcile. */
  async replan(reason: string): Promise<Placement> {
    const { deps, log, events, table } = this.#core;
    const board = await deps.sources.board();
    const catalog = await deps.sources.catalog();
    const engineVersion = deps.hosts.engineVersion;
    const slots = this.#desired
      .configSlots()
      .map((s) => (this.#parked.has(s.slot) ? { ...s, enabled: false } : s));
    const placement = planPlacement({
      board,
      catalog,
      slots,
      constraints: this.#stickyVersions(slots, this.#desired.constraints(), catalog),
      probes: this.#probes.forBoard(board.boardId, engineVersion),
      engineVersion,
      policy: this.#policy,
    });
    const revision = this.#desired.setPlacement(placement);
    this.#kinds = new Map(catalog.models.map((m) => [`${m.id}@${m.version}`, m.kind]));
    this.#placement = placement;
    if (deps.inUse) {
      const refs = new Map<string, { id: string; version: string }>();
      for (const i of placement.instances)
        for (const c of [i.chosen, ...i.fallback])
          refs.set(`${c.modelId}@${c.version}`, { id: c.modelId, version: c.version });
      deps.inUse([...refs.values()]);
    }
    log.info('placement', { revision, reason });
    events.emit('placement', { revision, placement, reason });
    table.wakeServingWaiters();
    this.#core.trigger();
    return placement;
  }

  /**
   * A slot whose version nobody set keeps the version it runs now: installing a newer version never switches by
   * itself (an OTA job's health gate, or an operator, decides that). Only the first plan takes the newest.
   */
  #stickyVersions(
    slots: readonly SlotSpec[],
    constraints: Partial<Record<SlotName, SlotConstraints>>,
    catalog: PlanCatalog,
  ): Partial<Record<SlotName, SlotConstraints>> {
    const out = { ...constraints };
    for (const spec of slots) {
      if (
        !('model' in spec.use) ||
        spec.use.model.version !== undefined ||
        out[spec.slot]?.version !== undefined
      )
        continue;
      const id = spec.use.model.id;
      const prev = this.#placement?.instances.find((i) => i.slots.includes(spec.slot))?.chosen;
      if (!prev || prev.modelId !== id) continue;
      if (!catalog.models.some((m) => m.id === id && m.version === prev.version)) continue;
      out[spec.slot] = { ...out[spec.slot], version: prev.version };
    }
    return out;
  }
}
