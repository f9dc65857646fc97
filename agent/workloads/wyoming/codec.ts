// The Wyoming protocol's framing (the README of rhasspy/wyoming): a JSON header line ending in "\n" with `type`,
// optional `data`, `data_length` and `payload_length` (and `version`), then exactly `data_length` bytes of JSON
// whose keys are merged over `data`, then exactly `payload_length` bytes of payload (PCM audio). The decoder is
// fed TCP reads of any size and bounds everything it buffers: a header line, the data and the payload each have
// a limit, and breaking one is a frame error that ends the connection (the stream cannot be resynchronised).
import { MnnEdgeError } from '../../../lib/errors.js';
import { INPUT_LIMITS } from '../../../lib/input-limits.js';
import { parseJsonInput } from '../../../lib/json-input.js';
import { quoteUntrusted } from '../../../lib/sanitize.js';

/** The protocol version this server writes into its headers (streaming events came in 1.7). */
export const WYOMING_VERSION = '1.8.0';

export interface WyomingEvent {
  type: string;
  data: Record<string, unknown>;
  payload?: Buffer;
}

export interface FrameLimits {
  maxHeaderBytes: number;
  maxDataBytes: number;
  maxPayloadBytes: number;
}

/** Frame errors: EFRAME (malformed), ETOOLARGE (over a limit), EBADJSON/EPAYLOAD/ETOODEEP (the JSON). */
export class WyomingFrameError extends MnnEdgeError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'WyomingFrameError';
  }
}

const MAX_TYPE_CHARS = 64;
const NEWLINE = 0x0a;

export function encodeEvent(event: WyomingEvent): Buffer {
  const header: Record<string, unknown> = { type: event.type, version: WYOMING_VERSION };
  // Data goes after the header, as the reference implementation writes it: the header line stays short.
  const data =
    Object.keys(event.data).length > 0 ? Buffer.from(JSON.stringify(event.data), 'utf8') : undefined;
  if (data) header['data_length'] = data.length;
  if (event.payload && event.payload.length > 0) header['payload_length'] = event.payload.length;
  const parts: Buffer[] = [Buffer.from(`${JSON.stringify(header)}\n`, 'utf8')];
  if (data) parts.push(data);
  if (event.payload && event.payload.length > 0) parts.push(event.payload);
  return Buffer.concat(parts);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function lengthField(header: Record<string, unknown>, key: string, max: number): number {
  const v = header[key];
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new WyomingFrameError(
      'EFRAME',
      `Header field ${key} must be a non-negative integer, got ${quoteUntrusted(JSON.stringify(v) ?? String(v))}`,
    );
  }
  if (v > max)
    throw new WyomingFrameError('ETOOLARGE', `Header field ${key} is ${v} bytes, over the limit of ${max}`);
  return v;
}

type Pending = { type: string; data: Record<string, unknown>; dataLength: number; payloadLength: number };

export class WyomingDecoder {
  readonly #limits: FrameLimits;
  #buffer: Buffer = Buffer.alloc(0);
  #pending: Pending | undefined;

  constructor(limits: FrameLimits) {
    this.#limits = limits;
  }

  /** Bytes held that are not yet a whole event. */
  get buffered(): number {
    return this.#buffer.length;
  }

  /** Whether the stream ended cleanly between events (else it was cut inside one). */
  get atBoundary(): boolean {
    return this.#buffer.length === 0 && this.#pending === undefined;
  }

  /** Whole events in the bytes so far; throws WyomingFrameError on the first malformed frame. */
  push(chunk: Buffer): WyomingEvent[] {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const out: WyomingEvent[] = [];
    for (;;) {
      if (!this.#pending) {
        const nl = this.#buffer.indexOf(NEWLINE);
        if (nl < 0) {
          if (this.#buffer.length > this.#limits.maxHeaderBytes) {
            throw new WyomingFrameError(
              'ETOOLARGE',
              `Header line is over the limit of ${this.#limits.maxHeaderBytes} bytes without a newline`,
            );
          }
          return out;
        }
        if (nl > this.#limits.maxHeaderBytes) {
          throw new WyomingFrameError(
            'ETOOLARGE',
            `Header line is ${nl} bytes, over the limit of ${this.#limits.maxHeaderBytes}`,
          );
        }
        const line = this.#buffer.subarray(0, nl);
        this.#buffer = this.#buffer.subarray(nl + 1);
        this.#pending = this.#parseHeader(line);
      }
      const p = this.#pending;
      if (this.#buffer.length < p.dataLength + p.payloadLength) return out;
      let data = p.data;
      if (p.dataLength > 0) {
        const extra = this.#json(
          this.#buffer.subarray(0, p.dataLength),
          'Wyoming event data',
          this.#limits.maxDataBytes,
        );
        if (!isObject(extra))
          throw new WyomingFrameError('EFRAME', 'Event data after the header must be a JSON object');
        data = { ...data, ...extra };
      }
      const payload =
        p.payloadLength > 0
          ? Buffer.from(this.#buffer.subarray(p.dataLength, p.dataLength + p.payloadLength))
          : undefined;
      this.#buffer = this.#buffer.subarray(p.dataLength + p.payloadLength);
      this.#pending = undefined;
      out.push({ type: p.type, data, ...(payload ? { payload } : {}) });
    }
  }

  #parseHeader(line: Buffer): Pending {
    const header = this.#json(line, 'Wyoming header', this.#limits.maxHeaderBytes);
    if (!isObject(header)) throw new WyomingFrameError('EFRAME', 'Header line must be a JSON object');
    const type = header['type'];
    if (typeof type !== 'string' || type.length === 0 || type.length > MAX_TYPE_CHARS) {
      throw new WyomingFrameError(
        'EFRAME',
        `Header field type must be a string of 1 to ${MAX_TYPE_CHARS} characters, got ${quoteUntrusted(JSON.stringify(type) ?? 'nothing')}`,
      );
    }
    const data = header['data'];
    if (data !== undefined && data !== null && !isObject(data))
      throw new WyomingFrameError('EFRAME', 'Header field data must be a JSON object');
    return {
      type,
      data: isObject(data) ? data : {},
      dataLength: lengthField(header, 'data_length', this.#limits.maxDataBytes),
      payloadLength: lengthField(header, 'payload_length', this.#limits.maxPayloadBytes),
    };
  }

  #json(bytes: Buffer, what: string, maxBytes: number): unknown {
    try {
      return parseJsonInput(bytes, what, { maxBytes, maxDepth: INPUT_LIMITS.jsonMaxDepth });
    } catch (err) {
      if (err instanceof MnnEdgeError) throw new WyomingFrameError(err.code, err.message);
      throw err;
    }
  }
}
