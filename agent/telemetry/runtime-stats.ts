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
  }
  return out;
}
