// The requests an engine host has not finished answering, by id: each settles from the host's messages (a
// result, a generation's pieces and end, a talker's audio, an error), or fails when the host process exits.
import { EngineError, type EngineErrorCode } from '../errors.js';
import type { HostResponse, HostResultValue } from './protocol.js';
import type { HostGeneration, HostSpeech } from './streams.js';

interface Pending {
  what: string;
  resolve: (v: HostResultValue) => void;
  reject: (e: Error) => void;
  stream?: HostGeneration;
  speech?: HostSpeech;
}

export class PendingRequests {
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();

  /** An id for a message that gets no answer of its own (a cancel, the exit request). */
  nextId(): number {
    return this.#nextId++;
  }

  /** Registers a request whose answer streams into `stream` or `speech`; returns its id. */
  add(what: string, into: { stream?: HostGeneration; speech?: HostSpeech } = {}): number {
    const id = this.#nextId++;
    this.#pending.set(id, { what, resolve: () => {}, reject: () => {}, ...into });
    return id;
  }

  /** Registers a request answered by one result; returns its id and the answer. */
  addCall(what: string): { id: number; answer: Promise<HostResultValue> } {
    const id = this.add(what);
    const p = this.#pending.get(id)!;
    const answer = new Promise<HostResultValue>((resolve, reject) => {
      p.resolve = resolve;
      p.reject = reject;
    });
    return { id, answer };
  }

  /** Forgets a request that could not be sent. */
  drop(id: number): void {
    this.#pending.delete(id);
  }

  /** Hands one of the host's answers to the request it belongs to. */
  deliver(m: Exclude<HostResponse, { type: 'ready' }>): void {
    const p = this.#pending.get(m.id);
    if (!p) return;
    switch (m.type) {
      case 'pieces':
        p.stream?.pushBatch(m.pieces, m.sentUs);
        return;
      case 'audio':
        p.speech?.push({ samples: m.samples, sampleRate: m.sampleRate, last: m.last });
        return;
      case 'spoken':
        this.#pending.delete(m.id);
        p.speech?.end();
        return;
      case 'done':
        this.#pending.delete(m.id);
        p.stream?.finish(m.result, m.delivery);
        return;
      case 'result':
        this.#pending.delete(m.id);
        p.resolve(m.value);
        return;
      case 'error':
        this.#pending.delete(m.id);
        fail(p, new EngineError(m.error.code as EngineErrorCode, m.error.message));
        return;
    }
  }

  /** The host is gone: every request still open fails with the error `errorFor` makes from what it was doing. */
  failAll(errorFor: (what: string) => Error): void {
    for (const [id, p] of this.#pending) {
      this.#pending.delete(id);
      fail(p, errorFor(p.what));
    }
  }
}

function fail(p: Pending, err: Error): void {
  if (p.stream) p.stream.fail(err);
  else if (p.speech) p.speech.end(err);
  else p.reject(err);
}
