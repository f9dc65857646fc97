import { MnnEdgeError } from '../../../lib/errors.js';
import { Histogram } from '../../../lib/histogram.js';
import type { Placement, SlotName } from '../../plan/types.js';
import type { KvReuseCounters, KvReuseOutcome } from '../../telemetry/runtime-stats.js';
import { assertSlot } from '../desired/desired-state.js';
import type { GenerateResult, Lease, SlotLease, SlotStats } from '../desired/types.js';
import {
  EngineFailure,
  type GenerateEvent,
  type GenerateRequest,
  type GenerateStats,
  type SpeakRequest,
  type SpeechOut,
  type TensorIn,
  type TensorOut,
} from '../engine/engine-port.js';
import { graphProfileOf } from '../engine/graph-models.js';
import type { Failover } from '../reconciling/failover.js';
import type { RuntimeCore } from '../reconciling/instance-table.js';
import { resilientStream } from './resilient-stream.js';

/** Time to first token, seconds: from a warm short prompt to a long prompt on a slow board. */
export const TTFT_BUCKETS_S = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];
/** Decode speed, tokens per second: below 5 a voice reply lags speech; 100+ is a GPU. */
export const DECODE_TPS_BUCKETS = [1, 2, 5, 10, 20, 40, 80, 160, 320];

/** Per slot, for /metrics: error counts by reason and the distributions of TTFT and decode speed. */
export interface SlotMetrics {
  slot: SlotName;
  requests: number;
  errorsByReason: Record<string, number>;
  ttft: ReturnType<Histogram['snapshot']>;
  decodeTps: ReturnType<Histogram['snapshot']>;
}

interface SlotCounters {
  requests: number;
  errors: number;
  errorsByReason?: Record<string, number>;
  ttftHist?: Histogram;
  tpsHist?: Histogram;
  tokensPerSec?: number;
  ttftMs?: number;
  kv?: KvReuseCounters;
  /** The host that served the slot's last generation (instance key and pid: another one starts with no KV). */
  lastHost?: string;
}

/** Adds one generation's KV reuse to a slot's counters. */
function countReuse(c: SlotCounters, reuse: KvReuseOutcome, host: string): void {
  const kv = c.kv ?? { hits: 0, partials: 0, misses: 0, reusedTokens: 0, prefilledTokens: 0 };
  if (reuse.outcome === 'hit') kv.hits++;
  else if (reuse.outcome === 'partial') kv.partials++;
  else kv.misses++;
  kv.reusedTokens += reuse.reusedTokens;
  kv.prefilledTokens += reuse.prefilledTokens;
  const newHost = c.lastHost !== undefined && c.lastHost !== host;
  kv.last = { ...reuse, newHost };
  c.kv = kv;
  c.lastHost = host;
}

/**
 * What the workloads call on the runtime to have a slot serve a request: the runtime hands its Serving to them
 * as `runtime.serving`, so that a request goes from the workload straight to the part that leases the host
 * (no facade in between, one async generator less for every token and audio chunk).
 */
export type SlotServing = Pick<Serving, 'acquire' | 'stream' | 'speak' | 'forward' | 'generate'>;

/** What serving needs of the placement: the plan, and loading a parked slot again. */
export interface ServingPlacement {
  placement(): Placement | undefined;
  /** Loads the slot's model again when park() had unloaded it (a no-op otherwise); the lease then waits for it. */
  wake(slot: SlotName): Promise<unknown>;
}

/**
 * The workloads' side of the runtime: leases on whatever serves a slot (waiting, bounded, while it is loaded
 * or swapped, or loaded again after a park), generation, speech and forwards on the leased host, and per-slot
 * request counters. A backend fault during a request moves the slot down its fallback chain.
 */
export class Serving {
  readonly #core: RuntimeCore;
  readonly #placement: ServingPlacement;
  readonly #failover: Failover;
  readonly #counters = new Map<SlotName, SlotCounters>();

  constructor(core: RuntimeCore, placement: ServingPlacement, failover: Failover) {
    this.#core = core;
    this.#placement = placement;
    this.#failover = failover;
  }

  /**
   * A lease on whatever serves the slot now; waits (bounded) while the slot is being loaded or swapped. A parked
   * slot's first request loads its model again, and the wait covers the load.
   */
  async acquire(slot: SlotName, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<SlotLease> {
    assertSlot(slot);
    await this.#placement.wake(slot);
    const { deps, opts: options, table } = this.#core;
    const deadline = deps.clock.monotonicMs() + (opts.timeoutMs ?? options.acquireTimeoutMs);
    for (;;) {
      opts.signal?.throwIfAborted();
      if (this.#core.stopped()) throw new MnnEdgeError('ESTOPPED', `runtime stopped: ${slot} is not served`);
      const placement = this.#placement.placement();
      const planned = placement?.slots.find((s) => s.slot === slot);
      if (planned?.status === 'builtin' && planned.builtin)
        return { kind: 'builtin', slot, builtin: planned.builtin, release: () => {} };
      if (planned === undefined && placement !== undefined)
        throw new MnnEdgeError('EUNSERVED', `slot ${slot} is not configured`);
      if (planned?.status === 'unloaded' || planned?.status === 'disabled')
        throw new MnnEdgeError(
          'EUNSERVED',
          `slot ${slot} is ${planned.status}: ${planned.reasons.join('; ')}`,
        );
      const inst = table.servingInstance(slot);
      if (inst?.status === 'ready') return { ...inst.lease(), kind: 'engine', slot };
      const left = deadline - deps.clock.monotonicMs();
      if (left <= 0)
        throw new MnnEdgeError(
          'ETIMEDOUT',
          `slot ${slot} was not served within ${opts.timeoutMs ?? options.acquireTimeoutMs} ms` +
            (this.#core.health().lastError
              ? ` (last reconcile error: ${this.#core.health().lastError})`
              : ''),
        );
      await table.waitServing(left, opts.signal);
    }
  }

  /** Generate on a slot, token by token. A request cut off by a host crash or a drain deadline throws an
   *  EngineFailure that says so; a backend fault also moves the slot down its fallback chain. */
  async *stream(
    slot: SlotName,
    request: GenerateRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<GenerateEvent> {
    const self = this;
    yield* resilientStream({
      signal,
      async *attempt() {
        const lease = await self.#engineLease(slot, 'llm', signal);
        yield* self.#streamOn(slot, lease, request, signal);
      },
      onRetry: (err) => this.#rescued(slot, 'retried', err.message, 0),
      onCutShort: (err, chars) => this.#rescued(slot, 'cut-short', err.message, chars),
    });
  }

  #rescued(slot: SlotName, outcome: 'retried' | 'cut-short', reason: string, streamedChars: number): void {
    this.#core.log.warn(
      outcome === 'retried' ? 'request retried on the fallback' : 'request cut short: backend lost',
      {
        slot,
        reason,
        streamedChars,
      },
    );
    this.#core.events.emit('request-rescued', { slot, outcome, reason, streamedChars });
  }

  /** Speech from the talker of the model serving the slot (voice.tts). */
  async *speak(slot: SlotName, request: SpeakRequest, signal?: AbortSignal): AsyncGenerator<SpeechOut> {
    const lease = await this.#engineLease(slot, 'llm', signal);
    const stats = this.#slotCounters(slot);
    stats.requests++;
    try {
      yield* lease.host.speak(request, signal ? AbortSignal.any([signal, lease.signal]) : lease.signal);
    } catch (err) {
      throw this.#requestFailed(lease, stats, err);
    } finally {
      lease.release();
    }
  }

  /** One forward of the graph model (MNN Express::Module) serving the slot (Silero VAD on voice.vad). */
  async forward(slot: SlotName, inputs: TensorIn[], signal?: AbortSignal): Promise<TensorOut[]> {
    const lease = await this.#engineLease(slot, 'graph', signal);
    const stats = this.#slotCounters(slot);
    stats.requests++;
    try {
      return await lease.host.forward(
        inputs,
        signal ? AbortSignal.any([signal, lease.signal]) : lease.signal,
      );
    } catch (err) {
      throw this.#requestFailed(lease, stats, err);
    } finally {
      lease.release();
    }
  }

  async generate(slot: SlotName, request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    const lease = await this.#engineLease(slot, 'llm', signal);
    let text = '';
    let stats: GenerateStats | undefined;
    for await (const ev of this.#streamOn(slot, lease, request, signal)) {
      if (ev.type === 'text') text += ev.text;
      else stats = ev.stats;
    }
    return { text, stats, instanceKey: lease.instanceKey };
  }

  /** Counters and histograms per slot that has served (for /metrics; read only when scraped). */
  slotMetrics(): SlotMetrics[] {
    const empty = (b: number[]) => new Histogram(b).snapshot();
    return [...this.#counters.entries()].map(([slot, c]) => ({
      slot,
      requests: c.requests,
      errorsByReason: { ...c.errorsByReason },
      ttft: c.ttftHist?.snapshot() ?? empty(TTFT_BUCKETS_S),
      decodeTps: c.tpsHist?.snapshot() ?? empty(DECODE_TPS_BUCKETS),
    }));
  }

  /** Per slot: what serves it and how the last requests went (telemetry's RuntimeStatsProvider shape). */
  slotStats(): SlotStats[] {
    const out: SlotStats[] = [];
    const { table } = this.#core;
    for (const planned of this.#placement.placement()?.slots ?? []) {
      const inst = table.instances.get(table.serving[planned.slot] ?? '');
      const c = this.#counters.get(planned.slot) ?? { requests: 0, errors: 0 };
      const s: SlotStats = { slot: planned.slot, requests: c.requests, errors: c.errors };
      if (inst) {
        s.model = `${inst.spec.modelId}@${inst.spec.version}`;
        s.variant = inst.spec.variantId;
        s.backend = inst.spec.config.backend_type;
        s.hostRssBytes = inst.rssBytes;
        if (Object.keys(inst.loadSplit).length > 0) s.loadSplit = { ...inst.loadSplit };
      } else if (planned.builtin) {
        s.model = planned.builtin;
      }
      if (c.tokensPerSec !== undefined) s.tokensPerSec = c.tokensPerSec;
      if (c.ttftMs !== undefined) s.ttftMs = c.ttftMs;
      if (c.kv) s.kv = { ...c.kv, ...(c.kv.last ? { last: { ...c.kv.last } } : {}) };
      out.push(s);
    }
    return out;
  }
  async #engineLease(slot: SlotName, use: 'llm' | 'graph', signal: AbortSignal | undefined): Promise<Lease> {
    const lease = await this.acquire(slot, signal ? { signal } : {});
    if (lease.kind === 'builtin') {
      lease.release();
      throw new MnnEdgeError(
        'EINVAL',
        `slot ${slot} is served by the built-in ${lease.builtin}, which runs in the workload, not in an engine host`,
      );
    }
    const spec = this.#core.table.instances.get(lease.instanceKey)?.spec;
    const isGraph = graphProfileOf(spec?.kind) !== undefined;
    if (isGraph !== (use === 'graph')) {
      lease.release();
      throw new MnnEdgeError(
        'EINVAL',
        isGraph
          ? `slot ${slot} is served by ${spec?.modelId}, a ${spec?.kind} model: it takes tensors (forward), not prompts`
          : `slot ${slot} is served by ${spec?.modelId}, a language model: it takes prompts, not tensors`,
      );
    }
    return lease;
  }

  async *#streamOn(
    slot: SlotName,
    lease: Lease,
    request: GenerateRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<GenerateEvent> {
    const combined = signal ? AbortSignal.any([signal, lease.signal]) : lease.signal;
    const stats = this.#slotCounters(slot);
    stats.requests++;
    const t0 = this.#core.deps.clock.monotonicMs();
    let first = true;
    try {
      for await (const ev of lease.host.generate(request, combined)) {
        if (ev.type === 'text' && first) {
          first = false;
          stats.ttftMs = this.#core.deps.clock.monotonicMs() - t0;
          stats.ttftHist ??= new Histogram(TTFT_BUCKETS_S);
          stats.ttftHist.observe(stats.ttftMs / 1000);
        } else if (ev.type === 'done') {
          if (ev.stats.decodeMs > 0) {
            stats.tokensPerSec = ev.stats.decodeTokens / (ev.stats.decodeMs / 1000);
            stats.tpsHist ??= new Histogram(DECODE_TPS_BUCKETS);
            stats.tpsHist.observe(stats.tokensPerSec);
          }
          // The host process, not only the instance key: a restarted host serves the same key with no KV.
          if (ev.stats.reuse) countReuse(stats, ev.stats.reuse, `${lease.instanceKey} pid ${lease.host.pid}`);
        }
        yield ev;
      }
    } catch (err) {
      throw this.#requestFailed(lease, stats, err);
    } finally {
      lease.release();
    }
  }

  /** Counts a failed request and returns the error to throw; a backend fault moves the slot down its chain. */
  #requestFailed(lease: Lease, stats: SlotCounters, err: unknown): unknown {
    stats.errors++;
    const reason =
      lease.signal.aborted && lease.signal.reason instanceof EngineFailure
        ? lease.signal.reason.kind
        : err instanceof EngineFailure
          ? err.kind
          : (err as Error)?.name === 'AbortError'
            ? 'cancelled'
            : 'error';
    stats.errorsByReason ??= {};
    stats.errorsByReason[reason] = (stats.errorsByReason[reason] ?? 0) + 1;
    // The lease's own abort reason is the clearest account of what happened to the host.
    if (lease.signal.aborted && lease.signal.reason instanceof EngineFailure) return lease.signal.reason;
    if (err instanceof EngineFailure && err.kind === 'backend')
      this.#failover.backendFault(lease.instanceKey, err);
    return err;
  }

  #slotCounters(slot: SlotName): SlotCounters {
    let c = this.#counters.get(slot);
    if (!c) {
      c = { requests: 0, errors: 0 };
      this.#counters.set(slot, c);
    }
    return c;
  }
}
