// A Wyoming client written from the protocol's README, independent of the agent's codec: a JSON header line
// (`type`, optional `data`, `data_length`, `payload_length`), then the data JSON bytes, then the payload bytes.
// Used by the integration test and the benchmark; `write` can cut an event into several TCP writes.
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ClientEvent {
  type: string;
  data: Record<string, unknown>;
  payload?: Buffer;
  /** performance.now() when the event was complete. */
  at: number;
}

/** One event as bytes; the data goes after the header line (as the reference writer does) unless `inline`. */
export function frame(
  type: string,
  data: Record<string, unknown> = {},
  payload?: Buffer,
  options: { inline?: boolean } = {},
): Buffer {
  const header: Record<string, unknown> = { type };
  const dataBytes = Buffer.from(JSON.stringify(data));
  if (options.inline) header['data'] = data;
  else if (Object.keys(data).length > 0) header['data_length'] = dataBytes.length;
  if (payload) header['payload_length'] = payload.length;
  const parts: Buffer[] = [Buffer.from(`${JSON.stringify(header)}\n`)];
  if (!options.inline && Object.keys(data).length > 0) parts.push(dataBytes);
  if (payload) parts.push(payload);
  return Buffer.concat(parts);
}

export class WyomingTestClient {
  readonly socket: Socket;
  readonly events: ClientEvent[] = [];
  readonly closed: Promise<void>;
  #buffer = Buffer.alloc(0);
  #waiters: Array<() => void> = [];

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#parse();
      for (const w of this.#waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        resolve();
        for (const w of this.#waiters.splice(0)) w();
      }),
    );
    socket.on('error', () => {});
  }

  static async connect(port: number, host = '127.0.0.1'): Promise<WyomingTestClient> {
    const socket = connect(port, host);
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new WyomingTestClient(socket);
  }

  #parse(): void {
    for (;;) {
      const nl = this.#buffer.indexOf(0x0a);
      if (nl < 0) return;
      const header = JSON.parse(this.#buffer.subarray(0, nl).toString('utf8')) as Record<string, unknown>;
      const dataLength = (header['data_length'] as number | undefined) ?? 0;
      const payloadLength = (header['payload_length'] as number | undefined) ?? 0;
      if (this.#buffer.length < nl + 1 + dataLength + payloadLength) return;
      const data = {
        ...((header['data'] as Record<string, unknown> | undefined) ?? {}),
        ...(dataLength > 0
          ? (JSON.parse(this.#buffer.subarray(nl + 1, nl + 1 + dataLength).toString('utf8')) as Record<
              string,
              unknown
            >)
          : {}),
      };
      const payload =
        payloadLength > 0
          ? this.#buffer.subarray(nl + 1 + dataLength, nl + 1 + dataLength + payloadLength)
          : undefined;
      this.events.push({
        type: String(header['type']),
        data,
        ...(payload ? { payload } : {}),
        at: performance.now(),
      });
      this.#buffer = this.#buffer.subarray(nl + 1 + dataLength + payloadLength);
    }
  }

  /** Writes bytes, cut at `cuts` into separate TCP writes with a pause between them. */
  async write(bytes: Buffer, cuts: number[] = []): Promise<void> {
    let at = 0;
    for (const cut of [...cuts, bytes.length]) {
      this.socket.write(bytes.subarray(at, cut));
      at = cut;
      if (cut < bytes.length) await sleep(5);
    }
  }

  send(type: string, data: Record<string, unknown> = {}, payload?: Buffer): void {
    this.socket.write(frame(type, data, payload));
  }

  /** The first event of `type` after index `from`, waiting for it (or throwing when the connection closed). */
  async next(type: string, from = 0, timeoutMs = 120_000): Promise<ClientEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find((e) => e.type === type);
      if (found) return found;
      if (this.socket.destroyed || Date.now() > deadline) {
        throw new Error(`no ${type} event; got ${JSON.stringify(this.events.map((e) => [e.type, e.data]))}`);
      }
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 100).unref();
      });
    }
  }

  close(): void {
    this.socket.end();
  }
}
