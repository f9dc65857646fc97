import type { ChatResult } from '../shared/chat-model.js';

// How the end of an answer reads to an OpenAI client. OpenAI's own values are stop, length, tool_calls and
// content_filter; none says "the answer broke off". An answer whose engine host died mid-way (a GPU driver
// reset) must not look complete, so it ends with finish_reason "error" — the value OpenRouter uses for the same
// case, which the official clients pass through (they do not validate the field) — and carries the specific
// reason beside it: native_finish_reason "backend-lost" and an error object saying which host died and how.

export interface OpenAiFinish {
  finish_reason: 'stop' | 'length' | 'tool_calls' | 'error';
  native_finish_reason?: 'backend-lost';
  error?: { message: string; type: 'server_error'; code: 'backend_lost' };
}

export function openAiFinish(r: Pick<ChatResult, 'finishReason' | 'detail'>): OpenAiFinish {
  switch (r.finishReason) {
    case 'length':
      return { finish_reason: 'length' };
    case 'tool_calls':
      return { finish_reason: 'tool_calls' };
    case 'backend-lost':
      return {
        finish_reason: 'error',
        native_finish_reason: 'backend-lost',
        error: {
          message:
            'The answer was cut short: the engine host serving the model was lost' +
            (r.detail ? ` (${r.detail})` : '') +
            '; the text so far is all there is, and the next request is served by the fallback',
          type: 'server_error',
          code: 'backend_lost',
        },
      };
    default:
      // `aborted` only ends requests whose client went away; nobody reads it.
      return { finish_reason: 'stop' };
  }
}
