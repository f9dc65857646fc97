// One chat request with tools, between the ChatModel port and the engine: the prompt rendered through the
// model's own template (tools, earlier calls, their results), and the answer's pieces split into the user's
// text and the calls. A request without tools (and no calls in its history) takes no part of this: MNN renders
// its template as it always did, so nothing changes for the voice loop's plain turns.
import type { ChatRequest, ChatResult, ToolCall, ToolSpec } from '../chat-model.js';
import { WorkloadError } from '../errors.js';
import { toolSupport } from './format.js';
import type { ModelChatTemplate } from './model-template.js';
import { DEFAULT_TOOL_CALL_LIMITS, type ToolCallLimits } from './parse-calls.js';
import { renderChatPrompt } from './render.js';
import { ToolCallStreamParser } from './stream-parser.js';

export interface ToolTurn {
  /** The model's whole input: hand it to the engine with its template off. */
  prompt: string;
  /** The user's text in this piece (markup held back or taken out). */
  push(piece: string): string;
  /** The end of the answer: the text still held. */
  finish(): string;
  /** The calls and the reasons markup stayed text, for ChatResult. */
  outcome(): Pick<ChatResult, 'toolCalls' | 'toolParseErrors'>;
}

/** Whether the request needs the agent to render the template: tools offered, or calls in its history. */
export function needsToolTurn(request: ChatRequest): boolean {
  return (
    (request.tools?.length ?? 0) > 0 ||
    request.messages.some((m) => m.role === 'tool' || (m.toolCalls?.length ?? 0) > 0)
  );
}

/**
 * Renders the request and sets up the parser. Throws WorkloadError ETOOL when the request offers tools and the
 * model's template cannot show them (its words say why), when the template refuses the conversation, and for
 * media, which the engine places only through its own template. Undefined when the request offers no tools and
 * the template knows none: its history (earlier calls and results) goes to MNN's own rendering, as before.
 */
export function toolTurn(
  request: ChatRequest,
  template: ModelChatTemplate | undefined,
  modelId: string,
  limits: ToolCallLimits = DEFAULT_TOOL_CALL_LIMITS,
): ToolTurn | undefined {
  const support = toolSupport(template);
  if (!support.ok && (request.tools?.length ?? 0) === 0) return undefined;
  if (!support.ok || !template)
    throw new WorkloadError(
      'ETOOL',
      `The model '${modelId}' does not support tools: ${support.ok ? 'no chat template' : support.reason}`,
    );
  if ((request.images?.length ?? 0) > 0 || request.audio)
    throw new WorkloadError(
      'ETOOL',
      'Images or audio together with tools are not supported yet: send them in a request without tools',
    );
  const choice = request.toolChoice ?? 'auto';
  // `none`: the model is not shown the tools at all, so it cannot write a call (there is no constrained decoding
  // on the device to forbid one).
  const shown: readonly ToolSpec[] = choice === 'none' ? [] : (request.tools ?? []);
  const prompt = renderChatPrompt(template, request.messages, {
    tools: shown,
    idStyle: support.format.idStyle,
  });
  // A named choice: every tool is shown (the same prompt, so its KV is reused), only that one may be called.
  let callable = shown;
  if (typeof choice === 'object') {
    callable = shown.filter((t) => t.function.name === choice.name);
    if (callable.length === 0)
      throw new WorkloadError(
        'ETOOL',
        `tool_choice names ${JSON.stringify(choice.name)}, which is not among the tools`,
      );
  }
  const parser =
    callable.length > 0 ? new ToolCallStreamParser(support.format, callable, { limits }) : undefined;
  const onDelta = request.onToolCallDelta;
  const pass = (o: { text: string; deltas: Parameters<NonNullable<typeof onDelta>>[0][] }) => {
    if (onDelta) for (const d of o.deltas) onDelta(d);
    return o.text;
  };
  return {
    prompt,
    push: (piece) => (parser ? pass(parser.push(piece)) : piece),
    finish: () => (parser ? pass(parser.finish()) : ''),
    outcome() {
      const calls: ToolCall[] = parser ? [...parser.calls] : [];
      const errors = parser ? [...parser.errors] : [];
      if (choice === 'required' && calls.length === 0)
        errors.push('tool_choice is "required", but the model answered without a call');
      if (typeof choice === 'object' && calls.length === 0)
        errors.push(
          `tool_choice names ${JSON.stringify(choice.name)}, but the model answered without calling it`,
        );
      return {
        ...(calls.length > 0 ? { toolCalls: calls } : {}),
        ...(errors.length > 0 ? { toolParseErrors: errors } : {}),
      };
    },
  };
}
