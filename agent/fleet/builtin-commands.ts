import type { Clock } from '../../lib/clock.js';
import type { LogTail } from '../../lib/log-tail.js';
import type { CommandRegistry } from './commands.js';

// The commands the fleet module answers itself. The rest (detect, list-models, set-placement, reload, bench,
// restart-workload) are registered by their owners at the composition root.

export interface BuiltinCommandDeps {
  clock: Clock;
  /** Whatever the composition root wants `get-state` to show (status, placement, slots, outbox). */
  state: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  logs: Pick<LogTail, 'tail'>;
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
      lines: deps.logs.tail({
        limit: params.lines ?? 100,
        ...(params.level ? { minLevel: params.level } : {}),
        ...(params.ns ? { ns: params.ns } : {}),
      }).records,
    }),
  });
}
