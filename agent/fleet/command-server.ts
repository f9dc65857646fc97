import type { Clock } from '../../lib/clock.js';
import { asMnnEdgeError } from '../../lib/errors.js';
import { parseJsonInput } from '../../lib/json-input.js';
import type { Logger } from '../../lib/log.js';
import { formatSchemaErrors, validate } from '../../lib/schema.js';
import {
  type CommandTarget,
  deviceTopics,
  parseCommandTopic,
  resolveResponseTopic,
} from '../../lib/topics.js';
import type { CommandOutcome, CommandRegistry } from './commands.js';
import {
  type CommandErrorCode,
  type CommandRequest,
  type CommandResponse,
  commandRequestSchema,
  ERROR_CODES,
  encode,
  type FleetSelector,
  PROTOCOL_VERSION,
} from './protocol.js';

// Turns one MQTT message on a command topic into exactly one response (or none, for a fleet command that
// selects other devices). Whatever arrives, the outcome is a response naming the problem, never a throw:
// this is the agent's most exposed input.

export interface IncomingMessage {
  topic: string;
  payload: Buffer;
  /** MQTT 5 request/response properties, when the broker speaks MQTT 5. */
  responseTopic?: string;
  correlationData?: Buffer;
}

export interface OutgoingResponse {
  topic: string;
  payload: string;
  /** Echoed MQTT 5 correlation data. */
  correlationData?: Buffer;
  response: CommandResponse;
  /** Until when the requester waits for it (the request's expiresAt), when the request said so. */
  expiresAt?: number;
}

export interface SelectorContext {
  deviceId: string;
  tags: readonly string[];
  boardFamily?: string;
}

export interface CommandServerOptions {
  registry: CommandRegistry;
  self: SelectorContext;
  maxPayloadBytes: number;
  clock: Clock;
  logger: Logger;
  signal?: AbortSignal;
}

export function selectorMatches(selector: FleetSelector | undefined, self: SelectorContext): boolean {
  if (selector === undefined) return true;
  if (selector.deviceIds && !selector.deviceIds.includes(self.deviceId)) return false;
  if (selector.tags && !selector.tags.some((t) => self.tags.includes(t))) return false;
  if (
    selector.boardFamilies &&
    (self.boardFamily === undefined || !selector.boardFamilies.includes(self.boardFamily))
  )
    return false;
  return true;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export class CommandServer {
  readonly #o: CommandServerOptions;
  readonly #defaultReplyTo: string;

  constructor(options: CommandServerOptions) {
    this.#o = options;
    this.#defaultReplyTo = deviceTopics(options.self.deviceId).responses;
  }

  async handle(msg: IncomingMessage): Promise<OutgoingResponse | undefined> {
    const { self, maxPayloadBytes, clock } = this.#o;
    const target = parseCommandTopic(self.deviceId, msg.topic);
    if (target === undefined) return undefined;
    const reply = {
      topic: this.#defaultReplyTo,
      id: undefined as string | undefined,
      correlationData: msg.correlationData,
      expiresAt: undefined as number | undefined,
    };
    if (msg.correlationData !== undefined) reply.id = correlationId(msg.correlationData);
    // A usable MQTT 5 response topic is known before the payload is even read, so parse errors reach it.
    const propTopic = msg.responseTopic;
    if (propTopic !== undefined) {
      const resolved = resolveResponseTopic(self.deviceId, propTopic);
      if (resolved === undefined)
        return this.#error(target, reply, 'ERESPONSETOPIC', badTopic(propTopic, self.deviceId));
      reply.topic = resolved;
    }

    if (msg.payload.length > maxPayloadBytes)
      return this.#error(
        target,
        reply,
        'ETOOLARGE',
        `Payload of ${msg.payload.length} bytes exceeds the limit of ${maxPayloadBytes} bytes`,
      );
    let parsed: unknown = {};
    if (msg.payload.length > 0) {
      try {
        parsed = parseJsonInput(msg.payload, 'Payload', { maxBytes: maxPayloadBytes });
      } catch (err) {
        // EPAYLOAD (not UTF-8), ETOODEEP, EBADJSON: one line each, from the shared input limits.
        const e = asMnnEdgeError(err);
        const code = (ERROR_CODES as readonly string[]).includes(e.code)
          ? (e.code as CommandErrorCode)
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
    const request = parsed as CommandRequest;
    reply.expiresAt = request.expiresAt;
    if (target.scope === 'fleet') {
      if (!selectorMatches(request.selector, self)) return undefined;
    } else if (request.selector !== undefined) {
      return this.#error(
        target,
        reply,
        'ESCHEMA',
        'A selector is only allowed on fleet commands (mnn-edge/fleet/cmd/…)',
      );
    }
    if (request.expiresAt !== undefined && request.expiresAt <= clock.nowMs())
      return this.#error(
        target,
        reply,
        'EEXPIRED',
        `Request expired at ${new Date(request.expiresAt).toISOString()}`,
      );

    const outcome: CommandOutcome = await this.#o.registry.dispatch(target.name, request.params, {
      deviceId: self.deviceId,
      logger: this.#o.logger,
      ...(this.#o.signal ? { signal: this.#o.signal } : {}),
    });
    return this.#respond(target, reply, outcome);
  }

  #error(target: CommandTarget, reply: Reply, code: CommandErrorCode, message: string): OutgoingResponse {
    this.#o.logger.debug('command rejected', { command: target.name, code, message });
    return this.#respond(target, reply, { ok: false, error: { code, message } });
  }

  #respond(target: CommandTarget, reply: Reply, outcome: CommandOutcome): OutgoingResponse {
    const response: CommandResponse = {
      v: PROTOCOL_VERSION,
      deviceId: this.#o.self.deviceId,
      command: target.name.slice(0, 64),
      ok: outcome.ok,
      ts: this.#o.clock.nowMs(),
      ...(reply.id !== undefined ? { id: reply.id } : {}),
      ...(outcome.ok ? { result: outcome.result } : { error: outcome.error }),
    };
    let payload: string;
    try {
      payload = encode('command-response', response);
    } catch (err) {
      // A handler returned something JSON cannot carry (a BigInt, a cycle): report that instead.
      const fallback: CommandResponse = {
        ...response,
        ok: false,
        result: undefined,
        error: {
          code: 'EHANDLER',
          message: `${target.name} returned an unserialisable result: ${(err as Error).message}`,
        },
      };
      delete fallback.result;
      payload = encode('command-response', fallback);
      return { topic: reply.topic, payload, response: fallback, ...corr(reply), ...deadline(reply) };
    }
    return { topic: reply.topic, payload, response, ...corr(reply), ...deadline(reply) };
  }
}

/** Where and how a request is answered, learnt while reading it. */
interface Reply {
  topic: string;
  id: string | undefined;
  correlationData: Buffer | undefined;
  expiresAt: number | undefined;
}

function corr(reply: Reply): { correlationData?: Buffer } {
  return reply.correlationData === undefined ? {} : { correlationData: reply.correlationData };
}

function deadline(reply: Reply): { expiresAt?: number } {
  return reply.expiresAt === undefined ? {} : { expiresAt: reply.expiresAt };
}

/** Correlation data is opaque bytes in MQTT 5; the payload carries it as text when it is printable. */
function correlationId(data: Buffer): string | undefined {
  const text = data.toString('utf8');
  return data.length > 0 && data.length <= 128 && /^[\x20-\x7e]+$/.test(text) ? text : undefined;
}

function badTopic(topic: string, deviceId: string): string {
  return `Response topic ${JSON.stringify(topic.slice(0, 80))} is not allowed: use mnn-edge/${deviceId}/responses[/…] (or mnn-edge/+/responses/… for fleet commands)`;
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}
