// Tool calls counted per tool and outcome: telemetry reads the counts since its last sample (the same way it
// reads the voice turns), /metrics the totals since start. Tool names come from MCP servers, so they are made
// safe for a metric name here; arguments and results never leave through telemetry.
import type { CallOutcome, ToolCallRecord } from './run-call.js';

export interface ToolCallCount {
  tool: string;
  outcome: CallOutcome;
  count: number;
}

/** Metric-safe: lower-case letters, digits and underscores, at most 64. */
export function metricToolName(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, '_')
      .slice(0, 64) || 'unnamed'
  );
}

export class ToolCallStats {
  readonly #totals = new Map<string, ToolCallCount>();
  #pending: ToolCallRecord[] = [];

  record(call: ToolCallRecord): void {
    const tool = metricToolName(call.name);
    const key = `${tool}\u0000${call.outcome}`;
    const entry = this.#totals.get(key) ?? { tool, outcome: call.outcome, count: 0 };
    entry.count++;
    this.#totals.set(key, entry);
    this.#pending.push(call);
    if (this.#pending.length > 10_000) this.#pending.shift();
  }

  /** Every (tool, outcome) seen since start with its count (for /metrics' counter). */
  totals(): ToolCallCount[] {
    return [...this.#totals.values()].map((c) => ({ ...c }));
  }

  /** Telemetry's view: counts since the last call, overall and per `<tool>.<outcome>`. */
  metrics(): Record<string, number> {
    const calls = this.#pending;
    this.#pending = [];
    const out: Record<string, number> = {
      'workload.tools.calls': calls.length,
      'workload.tools.calls_failed': calls.filter((c) => !c.ok).length,
    };
    for (const c of calls) {
      const key = `workload.tools.calls.${metricToolName(c.name)}.${c.outcome.replace('-', '_')}`;
      out[key] = (out[key] ?? 0) + 1;
    }
    return out;
  }
}
