import { asMnnEdgeError } from '../common/errors.js';
import { parseJsonInput } from '../common/json-input.js';
import { formatSchemaErrors, validate } from '../common/schema.js';
import { commandRequestSchema, ERROR_CODES, encode, PROTOCOL_VERSION, } from './protocol.js';
import { deviceTopics, parseCommandTopic, resolveResponseTopic } from './topics.js';
export function selectorMatches(selector, self) {
    if (selector === undefined)
        return true;
    if (selector.deviceIds && !selector.deviceIds.includes(self.deviceId))
        return false;
    if (selector.tags && !selector.tags.some((t) => self.tags.includes(t)))
        return false;
    if (selector.boardFamilies &&
        (self.boardFamily === undefined || !selector.boardFamilies.includes(self.boardFamily)))
        return false;
    return true;
}
function isPlainObject(v) {
    return typeof v === 'object' && v !== null && !Array.isArray(v);
}
export class CommandServer {
    #o;
    #defaultReplyTo;
    constructor(options) {
        this.#o = options;
        this.#defaultReplyTo = deviceTopics(options.self.deviceId).responses;
    }
    async handle(msg) {
        const { self, maxPayloadBytes, clock } = this.#o;
        const target = parseCommandTopic(self.deviceId, msg.topic);
        if (target === undefined)
            return undefined;
        const reply = {
            topic: this.#defaultReplyTo,
            id: undefined,
            correlationData: msg.correlationData,
        };
        if (msg.correlationData !== undefined)
            reply.id = correlationId(msg.correlationData);
        // A usable MQTT 5 response topic is known before the payload is even read, so parse errors reach it.
        const propTopic = msg.responseTopic;
        if (propTopic !== undefined) {
            const resolved = resolveResponseTopic(self.deviceId, propTopic);
            if (resolved === undefined)
                return this.#error(target, reply, 'ERESPONSETOPIC', badTopic(propTopic, self.deviceId));
            reply.topic = resolved;
        }
        if (msg.payload.length > maxPayloadBytes)
            return this.#error(target, reply, 'ETOOLARGE', `Payload of ${msg.payload.length} bytes exceeds the limit of ${maxPayloadBytes} bytes`);
        let parsed = {};
        if (msg.payload.length > 0) {
            try {
                parsed = parseJsonInput(msg.payload, 'Payload', { maxBytes: maxPayloadBytes });
            }
            catch (err) {
                // EPAYLOAD (not UTF-8), ETOODEEP, EBADJSON: one line each, from the shared input limits.
                const e = asMnnEdgeError(err);
                const code = ERROR_CODES.includes(e.code)
                    ? e.code
                    : 'EBADJSON';
                return this.#error(target, reply, code, e.message);
            }
        }
        if (!isPlainObject(parsed))
            return this.#error(target, reply, 'ESCHEMA', `Payload must be a JSON object, got ${jsonType(parsed)}`);
        // Take the correlation id and response topic before full validation, so schema errors reach the requester.
        if (reply.id === undefined && typeof parsed['id'] === 'string' && parsed['id'].length <= 128)
            reply.id = parsed['id'];
        if (propTopic === undefined && typeof parsed['responseTopic'] === 'string') {
            const resolved = resolveResponseTopic(self.deviceId, parsed['responseTopic']);
            if (resolved === undefined)
                return this.#error(target, reply, 'ERESPONSETOPIC', badTopic(parsed['responseTopic'], self.deviceId));
            reply.topic = resolved;
        }
        const errors = validate(commandRequestSchema, parsed);
        if (errors.length > 0)
            return this.#error(target, reply, 'ESCHEMA', `Invalid command request: ${formatSchemaErrors(errors)}`);
        const request = parsed;
        if (target.scope === 'fleet') {
            if (!selectorMatches(request.selector, self))
                return undefined;
        }
        else if (request.selector !== undefined) {
            return this.#error(target, reply, 'ESCHEMA', 'A selector is only allowed on fleet commands (mnn-edge/fleet/cmd/…)');
        }
        if (request.expiresAt !== undefined && request.expiresAt <= clock.nowMs())
            return this.#error(target, reply, 'EEXPIRED', `Request expired at ${new Date(request.expiresAt).toISOString()}`);
        const outcome = await this.#o.registry.dispatch(target.name, request.params, {
            deviceId: self.deviceId,
            logger: this.#o.logger,
            ...(this.#o.signal ? { signal: this.#o.signal } : {}),
        });
        return this.#respond(target, reply, outcome);
    }
    #error(target, reply, code, message) {
        this.#o.logger.debug('command rejected', { command: target.name, code, message });
        return this.#respond(target, reply, { ok: false, error: { code, message } });
    }
    #respond(target, reply, outcome) {
        const response = {
            v: PROTOCOL_VERSION,
            deviceId: this.#o.self.deviceId,
            command: target.name.slice(0, 64),
            ok: outcome.ok,
            ts: this.#o.clock.nowMs(),
            ...(reply.id !== undefined ? { id: reply.id } : {}),
            ...(outcome.ok ? { result: outcome.result } : { error: outcome.error }),
        };
        let payload;
        try {
            payload = encode('command-response', response);
        }
        catch (err) {
            // A handler returned something JSON cannot carry (a BigInt, a cycle): report that instead.
            const fallback = {
                ...response,
                ok: false,
                result: undefined,
                error: {
                    code: 'EHANDLER',
                    message: `${target.name} returned an unserialisable result: ${err.message}`,
                },
            };
            delete fallback.result;
            payload = encode('command-response', fallback);
            return { topic: reply.topic, payload, response: fallback, ...corr(reply.correlationData) };
        }
        return { topic: reply.topic, payload, response, ...corr(reply.correlationData) };
    }
}
function corr(data) {
    return data === undefined ? {} : { correlationData: data };
}
/** Correlation data is opaque bytes in MQTT 5; the payload carries it as text when it is printable. */
function correlationId(data) {
    const text = data.toString('utf8');
    return data.length > 0 && data.length <= 128 && /^[\x20-\x7e]+$/.test(text) ? text : undefined;
}
function badTopic(topic, deviceId) {
    return `Response topic ${JSON.stringify(topic.slice(0, 80))} is not allowed: use mnn-edge/${deviceId}/responses[/…] (or mnn-edge/+/responses/… for fleet commands)`;
}
function jsonType(v) {
    if (v === null)
        return 'null';
    if (Array.isArray(v))
        return 'an array';
    return `a ${typeof v}`;
}
//# sourceMappingURL=command-server.js.map