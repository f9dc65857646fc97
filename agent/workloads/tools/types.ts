// The contract between the acting assistant (the tool-round loop) and the sources of its tools: the built-in
// ones (time, timers, camera) and every MCP server the settings name. A source lists its tools and runs calls;
// the loop merges the lists, bounds the rounds and answers failures to the model as errors.
import type { ToolFunction } from '../shared/chat-model.js';

export interface ToolDefinition extends ToolFunction {
  /**
   * The call acts on the board itself (announce on its speaker): off for remote callers unless enabled. Tools of
   * an MCP server the owner configured (Home Assistant's lights) are not marked: connecting them was the consent.
   */
  acts?: boolean;
}

export interface ToolCallContext {
  signal: AbortSignal;
  /** The request came from another machine (the OpenAI/Ollama/MCP APIs), not the board's own voice loop. */
  remote: boolean;
}

export interface ToolOutcome {
  ok: boolean;
  /** What the model reads: the result, or the error in words. */
  content: string;
  /** Structured result for the dashboard and the logs, when the source gave one. */
  data?: unknown;
}

export interface ToolSource {
  /** `builtin`, or the MCP server's configured name. */
  readonly name: string;
  list(signal?: AbortSignal): Promise<readonly ToolDefinition[]>;
  call(tool: string, args: Record<string, unknown>, ctx: ToolCallContext): Promise<ToolOutcome>;
  close?(): Promise<void>;
}
