export const LOGS_MAX_LINES = 500;
export function registerBuiltinCommands(registry, deps) {
    const started = deps.clock.monotonicMs();
    registry.register({
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
    registry.register({
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
//# sourceMappingURL=builtin-commands.js.map