// The acting assistant as a ChatStream, for the callers built around one (the voice turn runner, Wyoming's
// handle role): the text of every round comes out as pieces, in order, while the turn runs; `result` is one
// ChatResult for the whole turn (counts summed over the rounds, the last call's timings and KV reuse) and `turn`
// the full record with the tool calls.
import type { ChatModel, ChatResult, ChatStream } from '../shared/chat-model.js';
import type { ActingAssistant, AssistantRequest, AssistantTurn } from './assistant.js';

export interface AssistantStream extends ChatStream {
  readonly turn: Promise<AssistantTurn>;
}

/** One ChatResult for a whole turn: the bounds the loop hit read as a plain stop, with the notice as detail. */
export function turnResult(turn: AssistantTurn): ChatResult {
  const finishReason =
    turn.finishReason === 'max_rounds' || turn.finishReason === 'budget' ? 'stop' : turn.finishReason;
  return {
    text: turn.text,
    finishReason,
    // The loop's own notice, else why the model's last answer ended early (which engine host died, and how).
    ...(turn.notice ? { detail: turn.notice } : turn.last?.detail ? { detail: turn.last.detail } : {}),
    promptTokens: turn.usage.promptTokens,
    generatedTokens: turn.usage.generatedTokens,
    prefillMs: turn.last?.prefillMs ?? 0,
    decodeMs: turn.usage.decodeMs,
    ...(turn.last?.reuse ? { reuse: turn.last.reuse } : {}),
  };
}

export function streamTurn(
  assistant: ActingAssistant,
  model: ChatModel,
  request: AssistantRequest,
): AssistantStream {
  const pieces: string[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const turn = assistant.run(model, {
    ...request,
    onEvent: (e) => {
      if (e.type === 'text') pieces.push(e.text);
      request.onEvent?.(e);
      poke();
    },
  });
  const settled = turn.then(
    () => undefined,
    () => undefined,
  );
  void settled.then(() => {
    ended = true;
    poke();
  });
  const result = turn.then(turnResult);
  // Marked as handled here: a caller that stops reading after a failure awaits neither, and the failure has
  // already reached it through the iteration.
  result.catch(() => {});
  return {
    turn,
    result,
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (pieces.length > 0) {
          yield pieces.shift()!;
          continue;
        }
        if (ended) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
      // A turn that failed (not one the loop ended itself) fails the iteration, as a model stream does.
      await turn;
    },
  };
}
