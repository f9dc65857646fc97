// What one MCP server entry says (`voice.tools.mcp`: a name, a URL, a token) and the limits its client keeps:
// the bounds on waiting, on sizes and on retrying that keep a bad or slow server from costing a turn more.
import { invalidParameter } from '../../../../lib/errors.js';

/** One entry of `voice.tools.mcp`. */
export interface McpServerSettings {
  name: string;
  url: string;
  token?: string | undefined;
}

export interface McpSourceLimits {
  /** Connecting (initialize + the first tool list). */
  connectTimeoutMs: number;
  /** One tool call, from request to answer. */
  callTimeoutMs: number;
  /** Characters of a result the model reads; the rest is cut with a note. */
  maxResultChars: number;
  /** Bytes of one HTTP answer read at all. */
  maxResponseBytes: number;
  /** Re-list the tools this often while connected (0: only on the server's notification). */
  refreshIntervalMs: number;
  /** Backoff after a failed connection: the first wait, doubled per failure up to the last. */
  retryMinMs: number;
  retryMaxMs: number;
  maxTools: number;
  maxDescriptionChars: number;
  maxSchemaChars: number;
}

export const mcpSourceDefaults: McpSourceLimits = {
  connectTimeoutMs: 10_000,
  callTimeoutMs: 30_000,
  maxResultChars: 16_000,
  maxResponseBytes: 4 * 1024 * 1024,
  refreshIntervalMs: 300_000,
  retryMinMs: 1_000,
  retryMaxMs: 60_000,
  maxTools: 64,
  maxDescriptionChars: 1_024,
  maxSchemaChars: 16_384,
};

/** The settings as a URL, or an error naming the entry's field when they can never work. */
export function checkSettings(s: McpServerSettings): URL {
  if (typeof s.name !== 'string' || s.name.trim().length === 0)
    throw invalidParameter('voice.tools.mcp[].name', 'a non-empty name', s.name);
  let url: URL;
  try {
    url = new URL(s.url);
  } catch {
    throw invalidParameter(`voice.tools.mcp[${s.name}].url`, 'an http:// or https:// URL', s.url);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalidParameter(`voice.tools.mcp[${s.name}].url`, 'an http:// or https:// URL', s.url);
  return url;
}
