import { errorMessage } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { formatSchemaErrors, type JsonSchema, validate } from '../../lib/schema.js';
import { COMMAND_NAME } from '../../lib/topics.js';
import type { CommandErrorCode } from './protocol.js';

// Commands are registered by name with a schema for their params; the registry validates before a handler
// runs, bounds its run time, and turns every failure into a response. Other modules (detect, models, plan,
// runtime) register their own commands at the composition root.

export interface CommandContext {
  deviceId: string;
  /** Aborted when the command's time is up or the agent stops. */
  signal: AbortSignal;
  logger: Logger;
}

export interface CommandDefinition<P = Record<string, unknown>> {
  name: string;
  summary: string;
  /** Schema of `params` (an object). Omitted: the command takes none. */
  params?: JsonSchema;
  /** Default 30 s. */
  timeoutMs?: number;
  handler(params: P, ctx: CommandContext): unknown;
}

export type CommandOutcome =
  | { ok: true; result: unknown }
  | { ok: false; error: { code: CommandErrorCode; message: string } };

export class CommandError extends Error {
  readonly code: CommandErrorCode;
  constructor(code: CommandErrorCode, message: string) {
    super(message);
    this.name = 'CommandError';
    this.code = code;
  }
}

const NO_PARAMS: JsonSchema = { type: 'object', additionalProperties: false, properties: {} };

export class CommandRegistry {
  readonly #commands = new Map<string, CommandDefinition>();

  register<P>(definition: CommandDefinition<P>): void {
    if (!COMMAND_NAME.test(definition.name))
      throw new Error(
        `Invalid command name ${JSON.stringify(definition.name)}: expected lowercase letters, digits and '-' (max 48)`,
      );
    if (this.#commands.has(definition.name))
      throw new Error(`Command "${definition.name}" is already registered`);
    this.#commands.set(definition.name, definition as unknown as CommandDefinition);
  }

  has(name: string): boolean {
    return this.#commands.has(name);
  }

  /** The JSON Schema of a command's params (an empty object when it takes none); undefined if unknown. */
  params(name: string): JsonSchema | undefined {
    const c = this.#commands.get(name);
    return c ? (c.params ?? NO_PARAMS) : undefined;
  }

  list(): { name: string; summary: string }[] {
    return [...this.#commands.values()]
      .map((c) => ({ name: c.name, summary: c.summary }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  async dispatch(
    name: string,
    params: unknown,
    ctx: Omit<CommandContext, 'signal'> & { signal?: AbortSignal },
  ): Promise<CommandOutcome> {
    const def = this.#commands.get(name);
    if (def === undefined) {
      const known = this.list().map((c) => c.name);
      return fail('EUNKNOWN', `Unknown command "${name}" (known: ${known.join(', ') || 'none'})`);
    }
    const given = params ?? {};
    const errors = validate(def.params ?? NO_PARAMS, given);
    if (errors.length > 0)
      return fail('EPARAMS', `Invalid params for ${name}: ${formatSchemaErrors(errors)}`);
    const timeoutMs = def.timeoutMs ?? 30_000;
    // A referenced timer, unlike AbortSignal.timeout(): a pending command keeps the process alive to answer.
    const timeoutController = new AbortController();
    const timeout = timeoutController.signal;
    const timer = setTimeout(() => timeoutController.abort(), timeoutMs);
    const signal = ctx.signal ? AbortSignal.any([ctx.signal, timeout]) : timeout;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () =>
        reject(
          timeout.aborted
            ? new CommandError('ETIMEOUT', `${name} did not finish within ${timeoutMs} ms`)
            : new CommandError('EHANDLER', `${name} was cancelled: the agent is stopping`),
        );
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const result = await Promise.race([
        Promise.resolve().then(() => def.handler(given as Record<string, unknown>, { ...ctx, signal })),
        aborted,
      ]);
      return { ok: true, result: result ?? null };
    } catch (err) {
      if (err instanceof CommandError) return fail(err.code, err.message);
      ctx.logger.warn('command failed', { command: name, error: errorMessage(err) });
      return fail('EHANDLER', `${name} failed: ${errorMessage(err)}`);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }
}

function fail(code: CommandErrorCode, message: string): CommandOutcome {
  return { ok: false, error: { code, message } };
}
