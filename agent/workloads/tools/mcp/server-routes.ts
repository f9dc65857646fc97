// Any ToolSource served as an MCP server on the agent's own port (the board's tools at POST /mcp), behind the
// agent's auth like the OpenAI API: `Authorization: Bearer <pairing token>`. Streamable HTTP in stateless mode:
// each POST gets its own SDK server and transport, so there is no session to lose across an agent restart and
// nothing is kept per client; answers are plain JSON (no SSE stream), and GET/DELETE answer 405, which tells
// MCP clients there is no server-initiated stream. Calls come from other machines (`remote: true`), and tools
// that act on the board are neither listed nor callable unless `allowActing` is set.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { errorMessage } from '../../../../lib/errors.js';
import type { Logger } from '../../../../lib/log.js';
import type { HttpRouter, RequestContext } from '../../../http/router.js';
import type { ToolDefinition, ToolSource } from '../types.js';

export const BOARD_MCP_PATH = '/mcp';

export interface McpServerRoutesDeps {
  router: HttpRouter;
  source: ToolSource;
  /** Offer tools marked `acts` (announce on the speaker) to MCP clients; off unless enabled in the settings. */
  allowActing: boolean;
  serverInfo: { name: string; version: string };
  /** One call's budget; the client's own timeout usually ends it first (Home Assistant's is 10 s). */
  callTimeoutMs?: number;
  path?: string;
  logger: Logger;
}

function offered(tools: readonly ToolDefinition[], allowActing: boolean): ToolDefinition[] {
  return tools.filter((t) => allowActing || t.acts !== true);
}

function asMcpTool(t: ToolDefinition): Tool {
  return {
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    inputSchema: t.parameters as Tool['inputSchema'],
    annotations: { readOnlyHint: t.acts !== true },
  };
}

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One SDK server per request, answering from the source; `requestSignal` ends when the client goes away. */
function serverFor(deps: McpServerRoutesDeps, requestSignal: AbortSignal): Server {
  const server = new Server(deps.serverInfo, {
    capabilities: { tools: {} },
    instructions: 'Tools of an mnn-edge board: its camera, its speaker and its state.',
  });
  server.setRequestHandler(ListToolsRequestSchema, async (_req, extra) => ({
    tools: offered(await deps.source.list(extra.signal), deps.allowActing).map(asMcpTool),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    const { name } = req.params;
    const args = req.params.arguments ?? {};
    const tools = offered(await deps.source.list(extra.signal), deps.allowActing);
    if (!tools.some((t) => t.name === name)) {
      const hidden = (await deps.source.list(extra.signal)).some((t) => t.name === name);
      return errorResult(
        hidden
          ? `The tool "${name}" acts on the board and is off for remote clients (enable it in the board's settings)`
          : `The board has no tool "${name}"`,
      );
    }
    const signal = AbortSignal.any([
      extra.signal,
      requestSignal,
      AbortSignal.timeout(deps.callTimeoutMs ?? 120_000),
    ]);
    try {
      const outcome = await deps.source.call(name, args, { signal, remote: true });
      return {
        content: [{ type: 'text', text: outcome.content }],
        ...(outcome.ok ? {} : { isError: true }),
        ...(isRecord(outcome.data) ? { structuredContent: outcome.data } : {}),
      };
    } catch (err) {
      deps.logger.warn('mcp server: tool call failed', { tool: name, error: errorMessage(err) });
      return errorResult(`${name} failed: ${errorMessage(err)}`);
    }
  });
  return server;
}

/** Registers POST <path> on the router; returns the function that removes it. */
export function registerMcpServer(deps: McpServerRoutesDeps): () => void {
  const handle = async (ctx: RequestContext) => {
    const body = await ctx.readJson();
    const gone = new AbortController();
    const server = serverFor(deps, gone.signal);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    ctx.res.on('close', () => {
      gone.abort(new Error('the MCP client closed the request'));
      void transport.close().catch(() => undefined);
      void server.close().catch(() => undefined);
    });
    await server.connect(transport);
    await transport.handleRequest(ctx.req, ctx.res, body);
  };
  return deps.router.route('POST', deps.path ?? BOARD_MCP_PATH, handle);
}
