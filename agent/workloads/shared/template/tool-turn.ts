// One chat request with tools, between the ChatModel port and the engine: the prompt rendered through the
// model's own template (tools, earlier calls, their results), and the answer's pieces split into the user's
// text and the calls. A request without tools (and no calls in its history) takes no part of this: MNN renders
// its template as it always did, so nothing changes for the voice loop's plain turns.
import { randomUUID } from 'node:crypto';
import { inertMediaTags, mediaPlaceholder } from '../../../../engine/index.js';
import type { ChatMessage, ChatRequest, ChatResult, ToolCall, ToolSpec } from '../chat-model.js';
import { WorkloadError } from '../errors.js';
import { toolSupport } from './format.js';
import type { ModelChatTemplate } from './model-template.js';
import { DEFAULT_TOOL_CALL_LIMITS, type ToolCallLimits } from './parse-calls.js';
import { renderChatPrompt } from './render.js';
import { ToolCallStreamParser } from './stream-parser.js';

export interface ToolTurn {
  /** The model's whole input: hand it to the engine with its template off. */
  prompt: string;
  /** The prompt holds the request's images and audio placeholders (the engine's `mediaPlaced`). */
  mediaPlaced: boolean;
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
 * The prompt, with the request's images and audio in its last user turn, before the text, where MNN's own
 * rendering puts them (MNN's Omni reads `<img>KEY</img>` / `<audio>KEY</audio>` in the prompt text and cannot
 * place media in a prompt it did not render). The template renders a random marker there; then everything in the
 * rendered text that MNN would read as a media tag (from a user's text, a tool's result or a tool's description)
 * is made inert, and the marker becomes the engine's placeholders, so only the request's own media are placed.
 */
function renderWithMedia(
  request: ChatRequest,
  render: (messages: readonly ChatMessage[]) => string,
): { prompt: string; mediaPlaced: boolean } {
  const placeholders = [
    ...(request.images ?? []).map((_, i) => mediaPlaceholder('image', i)),
    ...(request.audio ? [mediaPlaceholder('audio', 0)] : []),
  ];
  if (placeholders.length === 0) return { prompt: render(request.messages), mediaPlaced: false };
  const last = request.messages.map((m) => m.role).lastIndexOf('user');
  if (last < 0)
    throw new WorkloadError('ETOOL', 'Images or audio need a user message to go with, and there is none');
  const marker = `[[mnn-edge-media-${randomUUID()}]]`;
  const messages = request.messages.map((m, i) =>
    i === last ? { ...m, content: `${marker}${m.content}` } : m,
  );
  const rendered = render(messages);
  if (rendered.split(marker).length !== 2)
    throw new WorkloadError(
      'ETOOL',
      "The model's chat template does not show the user's message as it was written, so the images or audio " +
        'cannot be placed in it: send them in a request without tools',
    );
  return { prompt: inertMediaTags(rendered).replace(marker, placeholders.join('')), mediaPlaced: true };
}

/**
 * Renders the request and sets up the parser. Throws WorkloadError ETOOL when the request offers tools and the
 * model's template cannot show them (its words say why), and when the template refuses the conversation. Images
 * and audio are placed in the last user turn (renderWithMedia). Undefined when the request offers no tools and
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
  const choice = request.toolChoice ?? 'auto';
  // `none`: the model is not shown the tools at all, so it cannot write a call (there is no constrained decoding
  // on the device to forbid one).
  const shown: readonly ToolSpec[] = choice === 'none' ? [] : (request.tools ?? []);
  const { prompt, mediaPlaced } = renderWithMedia(request, (messages) =>
    renderChatPrompt(template, messages, { tools: shown, idStyle: support.format.idStyle }),
  );
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
    mediaPlaced,
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
