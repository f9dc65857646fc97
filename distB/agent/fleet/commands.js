import { errorMessage } from '../common/errors.js';
import { formatSchemaErrors, validate } from '../common/schema.js';
import { COMMAND_NAME } from './topics.js';
export class CommandError extends Error {
    code;
    constructor(code, message) {
        super(message);
        this.name = 'CommandError';
        this.code = code;
    }
}
const NO_PARAMS = { type: 'object', additionalProperties: false, properties: {} };
export class CommandRegistry {
    #commands = new Map();
    register(definition) {
        if (!COMMAND_NAME.test(definition.name))
            throw new Error(`Invalid command name ${JSON.stringify(definition.name)}: expected lowercase letters, digits and '-' (max 48)`);
        if (this.#commands.has(definition.name))
            throw new Error(`Command "${definition.name}" is already registered`);
        this.#commands.set(definition.name, definition);
    }
    has(name) {
        return this.#commands.has(name);
    }
    /** The JSON Schema of a command's params (an empty object when it takes none); undefined if unknown. */
    params(name) {
        const c = this.#commands.get(name);
        return c ? (c.params ?? NO_PARAMS) : undefined;
    }
    list() {
        return [...this.#commands.values()]
            .map((c) => ({ name: c.name, summary: c.summary }))
            .sort((a, b) => a.name.localeCompare(b.name));
    }
    async dispatch(name, params, ctx) {
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
        let onAbort;
        const aborted = new Promise((_, reject) => {
            onAbort = () => reject(timeout.aborted
                ? new CommandError('ETIMEOUT', `${name} did not finish within ${timeoutMs} ms`)
                : new CommandError('EHANDLER', `${name} was cancelled: the agent is stopping`));
            signal.addEventListener('abort', onAbort, { once: true });
        });
        try {
            const result = await Promise.race([
                Promise.resolve().then(() => def.handler(given, { ...ctx, signal })),
                aborted,
            ]);
            return { ok: true, result: result ?? null };
        }
        catch (err) {
            if (err instanceof CommandError)
                return fail(err.code, err.message);
            ctx.logger.warn('command failed', { command: name, error: errorMessage(err) });
            return fail('EHANDLER', `${name} failed: ${errorMessage(err)}`);
        }
        finally {
            clearTimeout(timer);
            if (onAbort)
                signal.removeEventListener('abort', onAbort);
        }
    }
}
function fail(code, message) {
    return { ok: false, error: { code, message } };
}
//# sourceMappingURL=commands.js.map