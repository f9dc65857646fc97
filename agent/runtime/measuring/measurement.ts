import { errorMessage } from '../../../lib/errors.js';
import type { Placement, ProbeResult } from '../../plan/types.js';
import type { ProbeStore } from '../desired/probe-store.js';
import { specOf } from '../desired/target.js';
import type { RuntimeCore } from '../reconciling/instance-table.js';
import type { Planning } from '../reconciling/planning.js';
import { probeCandidate, probeCandidates } from './probe.js';

export interface ProbeFilter {
  modelId?: string;
  version?: string;
}

export interface ProbeOptions {
  signal?: AbortSignal;
  lowPriority?: boolean;
  onResult?: (r: ProbeResult) => void;
  onSkip?: (key: string, reason: string) => void;
}

/** Measured selection: probes of the catalog's candidates on this board, stored for the planner's next call. */
export class Measurement {
  readonly #core: RuntimeCore;
  readonly #planning: Planning;
  readonly #probes: ProbeStore;
  readonly #exclusive: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly #replan: (reason: string) => Promise<Placement>;
  readonly #stopping: AbortSignal;
  readonly #background = new Set<Promise<unknown>>();

  constructor(
    core: RuntimeCore,
    parts: {
      planning: Planning;
      probes: ProbeStore;
      exclusive: <T>(fn: () => Promise<T>) => Promise<T>;
      replan: (reason: string) => Promise<Placement>;
      stopping: AbortSignal;
    },
  ) {
    this.#core = core;
    this.#planning = parts.planning;
    this.#probes = parts.probes;
    this.#exclusive = parts.exclusive;
    this.#replan = parts.replan;
    this.#stopping = parts.stopping;
  }

  /**
   * Probe every candidate of the catalog (or of one model) on this board, store the numbers, and plan again
   * with them. Each probe runs while no reconcile step does; a candidate that does not fit in MemAvailable
   * right now is skipped (not recorded as failed).
   */
  async probeModels(filter: ProbeFilter = {}, opts: ProbeOptions = {}): Promise<ProbeResult[]> {
    const { deps, opts: options, log } = this.#core;
    const board = await deps.sources.board();
    const catalog = await deps.sources.catalog();
    const candidates = probeCandidates(
      board,
      catalog,
      this.#planning.policy,
      deps.hosts.engineVersion,
      filter,
    );
    const signal = opts.signal ? AbortSignal.any([opts.signal, this.#stopping]) : this.#stopping;
    const results: ProbeResult[] = [];
    for (const c of candidates) {
      signal.throwIfAborted();
      const r = await this.#exclusive(async () => {
        const free = (await deps.memory.memAvailableBytes()) - options.memoryReserveBytes;
        if (c.memoryBytes > free) return `needs ${c.memoryBytes} bytes, ${free} available above the reserve`;
        return probeCandidate(specOf(c, this.#planning.kindOf), {
          hosts: deps.hosts,
          boardId: board.boardId,
          clock: deps.clock,
          signal,
          lowPriority: opts.lowPriority ?? false,
        });
      });
      if (typeof r === 'string') {
        log.info('probe skipped', { candidate: c.key, reason: r });
        opts.onSkip?.(c.key, r);
        continue;
      }
      this.#probes.put(r);
      results.push(r);
      opts.onResult?.(r);
    }
    if (results.length > 0) await this.#replan(`${results.length} probe result(s) stored`);
    return results;
  }

  /** After a model install: probe it at low priority in the background; errors are logged, not thrown. */
  probeInBackground(filter: ProbeFilter): void {
    const run = this.probeModels(filter, { lowPriority: true })
      .catch((err: unknown) => {
        if (!this.#core.stopped())
          this.#core.log.warn('background probe failed', { ...filter, error: errorMessage(err) });
      })
      .finally(() => this.#background.delete(run));
    this.#background.add(run);
  }

  /** Resolves once every background probe has ended. */
  async settled(): Promise<void> {
    await Promise.all(this.#background);
  }
}
