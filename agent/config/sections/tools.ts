import type { JsonSchema } from '../../../lib/schema.js';

// `voice.tools`: what the acting assistant (agent/workloads/tools) may call and how far a turn may go. The board's
// voice loop, the Wyoming `handle` role and the dashboard's typed chat all answer through it. Built-in tools are
// on by default where their workload runs (the camera tool only with a camera and vision on); the limits bound
// every turn however the model behaves, and a tool's result can change neither them nor the tool list.

export interface ToolLimits {
  /** Model calls that may end in tool calls per turn; the one after the last such round must answer in words. */
  maxRounds: number;
  /** One tool call's longest wait; past it the model is told the call timed out. */
  callTimeoutMs: number;
  /** The whole turn (every model call and tool call); past it the turn ends, saying so. */
  turnBudgetMs: number;
  /** A tool result longer than this (UTF-8 bytes) is cut, and the model is told it was. */
  maxResultBytes: number;
}

export interface McpServerConfig {
  /** The tool source's name: tools that clash with another source's are offered as `<name>_<tool>`. */
  name: string;
  /** Streamable HTTP endpoint, e.g. Home Assistant's `http://homeassistant.local:8123/api/mcp`. */
  url: string;
  /** Sent as `Authorization: Bearer`; masked in `mnn-edge config` and the Settings page. */
  token?: string;
}

export interface ToolsConfig {
  /** false: replies are plain text, no tools are offered. */
  enabled: boolean;
  builtins: { time: boolean; timers: boolean; camera: boolean; announce: boolean };
  /** Callers from other machines (OpenAI/Ollama/MCP APIs) may use tools that act on the board (announce). */
  allowRemoteActs: boolean;
  /** IANA zone the time tool answers in (default: the board's own). */
  timezone?: string;
  /** Timers that may be running at once. */
  maxTimers: number;
  limits: ToolLimits;
  /** MCP servers whose tools join the built-in ones (agent/workloads/tools/mcp). */
  mcp: McpServerConfig[];
}

export const toolsDefaults: ToolsConfig = {
  enabled: true,
  builtins: { time: true, timers: true, camera: true, announce: true },
  allowRemoteActs: false,
  maxTimers: 20,
  limits: { maxRounds: 4, callTimeoutMs: 10_000, turnBudgetMs: 60_000, maxResultBytes: 8192 },
  mcp: [],
};

const int = (minimum: number, maximum: number): JsonSchema => ({ type: 'integer', minimum, maximum });

export const toolsSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    builtins: {
      type: 'object',
      additionalProperties: false,
      properties: {
        time: { type: 'boolean' },
        timers: { type: 'boolean' },
        camera: { type: 'boolean' },
        announce: { type: 'boolean' },
      },
    },
    allowRemoteActs: { type: 'boolean' },
    timezone: { type: 'string', minLength: 1, maxLength: 64 },
    maxTimers: int(1, 1000),
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxRounds: int(1, 16),
        callTimeoutMs: int(100, 600_000),
        turnBudgetMs: int(1000, 3_600_000),
        maxResultBytes: int(256, 1 << 20),
      },
    },
    mcp: {
      type: 'array',
      maxItems: 16,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'url'],
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,32}$' },
          url: { type: 'string', pattern: '^https?://', maxLength: 2048 },
          token: { type: 'string', minLength: 1, maxLength: 4096 },
        },
      },
    },
  },
};
