// The board's own abilities as tools, for other machines (the board's MCP server): what the camera sees, a
// question about it, a sentence on the speaker, the board's state. Each tool is listed only where the board has
// what it needs (a camera, a speaker, a status source); a call that cannot be answered now says why. Announce
// acts on the board, so it is marked `acts` and the server leaves it out for remote clients unless enabled.
import { errorMessage } from '../../../lib/errors.js';
import type { ToolCallContext, ToolDefinition, ToolOutcome, ToolSource } from './types.js';

/** `F` is the camera's frame as the vision slot takes it (an RGB frame): the tools only pass it along. */
export interface BoardToolsDeps<F> {
  /** A frame from the board's camera now; undefined: no camera configured (the camera tools are absent). */
  frame?: ((signal: AbortSignal) => Promise<F>) | undefined;
  /** The vision slot's answer to a question about a frame. */
  ask: (frame: F, question: string, signal: AbortSignal) => Promise<string>;
  /** Why the vision slot cannot answer now (no model, vision disabled), or undefined when it can. */
  visionMissing: () => string | undefined;
  /** Speaks a sentence on the board's speaker; undefined: the board has none configured. */
  announce?: ((text: string, signal: AbortSignal) => Promise<void>) | undefined;
  /** The board's state: model placement, backends, temperatures. */
  status?: (() => Promise<Record<string, unknown>> | Record<string, unknown>) | undefined;
  /** Characters of a question or a sentence to speak (default 500). */
  maxTextChars?: number;
}

export const BOARD_TOOL_NAMES = {
  describe: 'camera_describe',
  ask: 'camera_ask',
  announce: 'announce',
  status: 'board_status',
} as const;

const DESCRIBE_PROMPT = 'Describe what the camera sees in one or two short sentences.';

function textParam(name: string, description: string): Record<string, unknown> {
  return {
    type: 'object',
    properties: { [name]: { type: 'string', minLength: 1, description } },
    required: [name],
    additionalProperties: false,
  };
}

const NO_ARGS = { type: 'object', properties: {}, additionalProperties: false };

function definitions<F>(deps: BoardToolsDeps<F>): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  if (deps.frame) {
    out.push(
      {
        name: BOARD_TOOL_NAMES.describe,
        description: "Describes what the board's camera sees right now.",
        parameters: NO_ARGS,
      },
      {
        name: BOARD_TOOL_NAMES.ask,
        description: "Answers a question about what the board's camera sees right now.",
        parameters: textParam(
          'question',
          'The question about the camera image, e.g. "Is the garage door open?"',
        ),
      },
    );
  }
  if (deps.announce)
    out.push({
      name: BOARD_TOOL_NAMES.announce,
      description: "Speaks a sentence aloud on the board's speaker.",
      parameters: textParam('text', 'The sentence to speak'),
      acts: true,
    });
  if (deps.status)
    out.push({
      name: BOARD_TOOL_NAMES.status,
      description: "The board's state: which models run where, the compute backends, temperatures.",
      parameters: NO_ARGS,
    });
  return out;
}

function failed(content: string): ToolOutcome {
  return { ok: false, content };
}

/** The argument `name` as bounded text, or the reason it is not. */
function textArg(args: Record<string, unknown>, name: string, max: number): string | ToolOutcome {
  const v = args[name];
  if (typeof v !== 'string' || v.trim().length === 0) return failed(`"${name}" must be a non-empty string`);
  if (v.length > max) return failed(`"${name}" has ${v.length} characters, over the limit of ${max}`);
  return v.trim();
}

export function createBoardTools<F>(deps: BoardToolsDeps<F>): ToolSource {
  const maxText = deps.maxTextChars ?? 500;

  const look = async (question: string, signal: AbortSignal): Promise<ToolOutcome> => {
    const missing = deps.visionMissing();
    if (missing) return failed(`The camera cannot be asked now: ${missing}`);
    let frame: F;
    try {
      frame = await deps.frame!(signal);
    } catch (err) {
      return failed(`The camera gave no picture: ${errorMessage(err)}`);
    }
    const answer = await deps.ask(frame, question, signal);
    return {
      ok: true,
      content: answer.trim().length > 0 ? answer.trim() : '(the vision model said nothing)',
    };
  };

  return {
    name: 'board',
    list: async () => definitions(deps),
    async call(tool: string, args: Record<string, unknown>, ctx: ToolCallContext): Promise<ToolOutcome> {
      const offered = definitions(deps).some((d) => d.name === tool);
      if (!offered) return failed(`The board has no tool "${tool}" here`);
      try {
        switch (tool) {
          case BOARD_TOOL_NAMES.describe:
            return await look(DESCRIBE_PROMPT, ctx.signal);
          case BOARD_TOOL_NAMES.ask: {
            const q = textArg(args, 'question', maxText);
            return typeof q === 'string' ? await look(q, ctx.signal) : q;
          }
          case BOARD_TOOL_NAMES.announce: {
            const text = textArg(args, 'text', maxText);
            if (typeof text !== 'string') return text;
            await deps.announce!(text, ctx.signal);
            return { ok: true, content: `Announced: ${text}` };
          }
          default: {
            const status = await deps.status!();
            return { ok: true, content: JSON.stringify(status), data: status };
          }
        }
      } catch (err) {
        return failed(`${tool} failed: ${errorMessage(err)}`);
      }
    },
  };
}
