import { EngineFailure, type GenerateEvent } from '../engine/engine-port.js';

// A generation that survives losing its engine host (a GPU driver reset kills it): the runtime falls back to
// the next candidate underneath, and this decides what the caller sees. Nothing streamed yet: the request runs
// again on whatever serves the slot now, and the caller never knows. Tokens already streamed: they cannot be
// taken back, so the answer ends there with its own finish reason ('backend-lost'), and the next turn goes to
// the fallback.

/** Failures that mean the host or its backend went away, not that this request was bad or cancelled. */
export function lostBackend(err: unknown): err is EngineFailure {
  return err instanceof EngineFailure && (err.kind === 'crash' || err.kind === 'backend');
}

export interface ResilientStreamOptions {
  /** One try: acquire the slot's current host and stream from it. */
  attempt: () => AsyncIterable<GenerateEvent>;
  signal?: AbortSignal | undefined;
  /** Tries after the first when nothing was streamed (default 1). */
  retries?: number;
  onRetry?: (err: EngineFailure, attempt: number) => void;
  onCutShort?: (err: EngineFailure, streamedChars: number) => void;
}

export async function* resilientStream(options: ResilientStreamOptions): AsyncGenerator<GenerateEvent> {
  const retries = options.retries ?? 1;
  let streamed = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      for await (const ev of options.attempt()) {
        if (ev.type === 'text') streamed += ev.text.length;
        yield ev;
      }
      return;
    } catch (err) {
      if (options.signal?.aborted || !lostBackend(err)) throw err;
      if (streamed === 0 && attempt < retries) {
        options.onRetry?.(err, attempt + 1);
        continue;
      }
      if (streamed === 0) throw err;
      options.onCutShort?.(err, streamed);
      yield {
        type: 'done',
        finishReason: 'backend-lost',
        stats: { promptTokens: 0, decodeTokens: 0, prefillMs: 0, decodeMs: 0 },
        detail: err.message,
      };
      return;
    }
  }
}
