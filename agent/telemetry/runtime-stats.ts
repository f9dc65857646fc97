import type { MetricSample } from './samplers.js';

// What the runtime and workloads modules expose to telemetry. Telemetry only reads; they own the numbers.

export interface SlotRuntimeStats {
  slot: string;
  model?: string;
  variant?: string;
  backend?: string;
  /** Decode throughput of the last request(s), tokens per second. */
  tokensPerSec?: number;
  /** Time to first token of the last request, ms. */
  ttftMs?: number;
  /** Cumulative since the engine host started. */
  requests: number;
  errors: number;
  /** Resident memory of the slot's engine host process. */
  hostRssBytes?: number;
  /** Conversation KV reuse across the slot's generations (engine hosts keep the KV of a common prefix). */
  kv?: KvReuseCounters;
}

/** One generation's use of the KV its engine host held (engine's PrefixReuse). */
export interface KvReuseOutcome {
  outcome: 'hit' | 'partial' | 'miss';
  /**
   * Why not all of it: cold (a new, restarted or failed-over host, or a new conversation context), disabled,
   * diverged, media, regenerate, evicted (its conversation's snapshot was given up), chunk (all that was held lies
   * before the first boundary of MNN's prefill chunk).
   */
  reason: string | null;
  reusedTokens: number;
  prefilledTokens: number;
  /** MNN's prefill chunk the kept KV ends on a multiple of (arm64 at precision low: exact reuse); absent: none. */
  chunkTokens?: number;
  /** The conversation context it ran in (0: the instance's own) and how that was chosen: own, new, lru, only. */
  context?: number;
  route?: string;
  /** Conversation contexts the instance held after it, and the bytes the extra ones hold. */
  contexts?: number;
  snapshotBytes?: number;
}

export interface KvReuseCounters {
  hits: number;
  partials: number;
  misses: number;
  /** Prompt tokens whose KV was kept, and prompt tokens prefilled, summed over the generations. */
  reusedTokens: number;
  prefilledTokens: number;
  last?: KvReuseOutcome & {
    /** The instance that served it differs from the one before: its KV started cold (failover, restart). */
    newHost: boolean;
  };
}

export interface RuntimeStatsProvider {
  slots(): readonly SlotRuntimeStats[];
}

export interface WorkloadMetricsProvider {
  /** Gauges named `workload.<name>.<metric>`, e.g. `workload.voice.turn_latency_ms`. */
  metrics(): MetricSample;
}

// Slot names (`voice.llm`) appear as they are: `slot.<slot>.<metric>` (docs/PROTOCOL.md); consumers split off
// the known `slot.` prefix and metric suffix. Anything outside the metric-name alphabet becomes `_`.
const SAFE = /[^A-Za-z0-9_.-]/g;

/** The numeric gauges of each slot, as metrics to aggregate over the interval. */
export function slotGauges(stats: readonly SlotRuntimeStats[]): MetricSample {
  const out: MetricSample = {};
  for (const s of stats) {
    const p = `slot.${s.slot.replace(SAFE, '_')}`;
    if (s.tokensPerSec !== undefined) out[`${p}.tokens_per_sec`] = s.tokensPerSec;
    if (s.ttftMs !== undefined) out[`${p}.ttft_ms`] = s.ttftMs;
    if (s.hostRssBytes !== undefined) out[`${p}.rss_bytes`] = s.hostRssBytes;
    if (s.kv && s.kv.reusedTokens + s.kv.prefilledTokens > 0) {
      out[`${p}.kv_reuse_ratio`] = s.kv.reusedTokens / (s.kv.reusedTokens + s.kv.prefilledTokens);
      out[`${p}.kv_misses`] = s.kv.misses;
      // What the instance's extra conversation contexts held after its last generation (counted in its plan).
      if (s.kv.last?.snapshotBytes !== undefined) out[`${p}.kv_snapshot_bytes`] = s.kv.last.snapshotBytes;
    }
  }
  return out;
}
