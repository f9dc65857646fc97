import type { Clock } from '../common/clock.js';
import type { CommandRegistry } from './commands.js';

// The commands the fleet module answers itself. The rest (detect, list-models, set-placement, reload, bench,
// restart-workload) are registered by their owners at the composition root.

export interface LogRecord {
  ts: string;
  level: string;
  ns: string;
  msg: string;
  [field: string]: unknown;
}

/** A bounded ring of recent log lines, fed by the logger's `write`, read by the `logs` command. */
export class LogRing {
  readonly #lines: string[] = [];
  readonly #capacity: number;

  constructor(capacity = 2000) {
    this.#capacity = capacity;
  }

  /** Pass as (or call from) `createLogger({ write })`. */
  readonly write = (line: string): void => {
    this.#lines.push(line);
    if (this.#lines.length > this.#capacity) this.#lines.splice(0, this.#lines.length - this.#capacity);
  };

  tail(limit: number, filter: { level?: string; ns?: string } = {}): LogRecord[] {
    const order: Record<string, number> = { debug: 10, info: 20, warn: 30, error: 40 };
    const min = filter.level ? (order[filter.level] ?? 0) : 0;
    const out: LogRecord[] = [];
    for (let i = this.#lines.length - 1; i >= 0 && out.length < limit; i--) {
      let rec: LogRecord;
      try {
        rec = JSON.parse(this.#lines[i]!) as LogRecord;
      } catch {
        continue;
      }
      if ((order[rec.level] ?? 0) < min) continue;
      if (filter.ns && !rec.ns.startsWith(filter.ns)) continue;
      out.push(rec);
    }
    return out.reverse();
  }
}

export interface BuiltinCommandDeps {
  clock: Clock;
  /** Whatever the composition root wants `get-state` to show (status, placement, slots, outbox). */
  state: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  logs: Pick<LogRing, 'tail'>;
  agentVersion: string;
}

export const LOGS_MAX_LINES = 500;

export function registerBuiltinCommands(registry: CommandRegistry, deps: BuiltinCommandDeps): void {
  const started = deps.clock.monotonicMs();
  registry.register<{ echo?: string }>({
    name: 'ping',
    summary: 'liveness check; echoes `echo`',
    params: {
      type: 'object',
      additionalProperties: false,
      properties: { echo: { type: 'string', maxLength: 256 } },
    },
    timeoutMs: 5_000,
    handler: (params) => ({
      pong: true,
      ts: deps.clock.nowMs(),
      uptimeSec: Math.round((deps.clock.monotonicMs() - started) / 1000),
      agentVersion: deps.agentVersion,
      ...(params.echo !== undefined ? { echo: params.echo } : {}),
    }),
  });
  registry.register({
    name: 'get-state',
    summary: 'the agent state: status, documents, slots, outbox',
    timeoutMs: 10_000,
    handler: () => deps.state(),
  });
  registry.register<{ lines?: number; level?: 'debug' | 'info' | 'warn' | 'error'; ns?: string }>({
    name: 'logs',
    summary: `the last log lines (at most ${LOGS_MAX_LINES}), optionally filtered by level and namespace`,
    params: {
      type: 'object',
      additionalProperties: false,
      properties: {
        lines: { type: 'integer', minimum: 1, maximum: LOGS_MAX_LINES },
        level: { enum: ['debug', 'info', 'warn', 'error'] },
        ns: { type: 'string', maxLength: 128 },
      },
    },
    timeoutMs: 5_000,
    handler: (params) => ({
      lines: deps.logs.tail(params.lines ?? 100, {
        ...(params.level ? { level: params.level } : {}),
        ...(params.ns ? { ns: params.ns } : {}),
      }),
    }),
  });
}
