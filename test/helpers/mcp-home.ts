// A small "home" MCP server made with the SDK's own server, standing in for Home Assistant's `mcp_server`
// (streamable HTTP at /api/mcp, a bearer token, the Assist tool names): lights that switch (HassTurnOn,
// HassTurnOff {name}), GetLiveContext, a tool that fails, one that hangs until cancelled and one that answers as
// many characters as asked. Sessions are stateful, so the server can announce `notifications/tools/list_changed`
// (addTool) and forget every session when it restarts on the same port, as a real one does.
import { randomUUID } from 'node:crypto';
import {
  createServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  isInitializeRequest,
  ListToolsRequestSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

export const MCP_HOME_PATH = '/api/mcp';

export interface McpHomeOptions {
  /** Listen on this port (0: any); a restart passes the previous port. */
  port?: number;
  token?: string;
  /** The lights and their state at start. */
  lights?: Record<string, 'on' | 'off'>;
}

export interface McpHome {
  url: string;
  port: number;
  token: string;
  /** The lights' state now: what the tools switched. */
  lights: Map<string, 'on' | 'off'>;
  /** Every call the home received, in order. */
  calls: Array<{ tool: string; args: Record<string, unknown> }>;
  /** Calls of HassHang waiting now (they end when cancelled or the home closes). */
  readonly hanging: number;
  /** Offers one more tool and (unless `notify` is false) tells every session its tool list changed. */
  addTool(name: string, description: string, options?: { notify?: boolean }): Promise<void>;
  /** Stops at once: open connections are cut, in-flight calls die with them. */
  close(): Promise<void>;
}

const nameArg: Tool['inputSchema'] = {
  type: 'object',
  properties: { name: { type: 'string', description: 'The name of the device or area' } },
  required: ['name'],
};

const BASE_TOOLS: Tool[] = [
  { name: 'HassTurnOn', description: 'Turns on/opens a device or entity', inputSchema: nameArg },
  { name: 'HassTurnOff', description: 'Turns off/closes a device or entity', inputSchema: nameArg },
  {
    name: 'GetLiveContext',
    description: 'Provides real-time information about the CURRENT state of devices',
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true },
  },
  { name: 'HassBroken', description: 'Always fails', inputSchema: { type: 'object', properties: {} } },
  { name: 'HassHang', description: 'Never answers', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'HassHuge',
    description: 'Answers `chars` characters',
    inputSchema: { type: 'object', properties: { chars: { type: 'integer' } }, required: ['chars'] },
  },
];

function text(t: string, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks).toString('utf8');
  return body.length > 0 ? JSON.parse(body) : undefined;
}

export async function startMcpHome(options: McpHomeOptions = {}): Promise<McpHome> {
  const token = options.token ?? `home-${randomUUID()}`;
  const lights = new Map<string, 'on' | 'off'>(
    Object.entries(options.lights ?? { kitchen: 'off', 'living room': 'off' }),
  );
  const calls: McpHome['calls'] = [];
  const tools = [...BASE_TOOLS];
  const sessions = new Map<string, { server: Server; transport: StreamableHTTPServerTransport }>();
  const hangs = new Set<() => void>();

  const switchLight = (args: Record<string, unknown>, state: 'on' | 'off'): CallToolResult => {
    const name = String(args['name'] ?? '').toLowerCase();
    if (!lights.has(name)) return text(`No device named "${name}"`, true);
    lights.set(name, state);
    return text(`Turned ${state} ${name}`);
  };

  const run = async (
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> => {
    switch (tool) {
      case 'HassTurnOn':
        return switchLight(args, 'on');
      case 'HassTurnOff':
        return switchLight(args, 'off');
      case 'GetLiveContext':
        return text([...lights].map(([n, s]) => `- ${n} (light): ${s}`).join('\n'));
      case 'HassBroken':
        return text('The broken tool failed: the bridge to the boiler is offline', true);
      case 'HassHang':
        return new Promise<CallToolResult>((resolve) => {
          const end = () => {
            hangs.delete(end);
            resolve(text('cancelled', true));
          };
          hangs.add(end);
          signal.addEventListener('abort', end, { once: true });
        });
      case 'HassHuge':
        return text('x'.repeat(Number(args['chars'] ?? 0)));
      default:
        return text(`Unknown tool ${tool}`, true);
    }
  };

  const newSession = (): { server: Server; transport: StreamableHTTPServerTransport } => {
    const server = new Server(
      { name: 'mcp-home', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
    server.setRequestHandler(CallToolRequestSchema, (req, extra) => {
      const args = (req.params.arguments ?? {}) as Record<string, unknown>;
      calls.push({ tool: req.params.name, args });
      return run(req.params.name, args, extra.signal);
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, entry);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    const entry = { server, transport };
    return entry;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://home');
    if (url.pathname !== MCP_HOME_PATH) return void res.writeHead(404).end('not found');
    if (req.headers.authorization !== `Bearer ${token}`)
      return void res.writeHead(401, { 'content-type': 'text/plain' }).end('401: Unauthorized');
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    const id = req.headers['mcp-session-id'];
    let entry = typeof id === 'string' ? sessions.get(id) : undefined;
    if (!entry) {
      if (typeof id === 'string' || req.method !== 'POST' || !isInitializeRequest(body))
        return void res.writeHead(404, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: -32001, message: 'Session not found' },
            id: null,
          }),
        );
      entry = newSession();
      await entry.server.connect(entry.transport);
    }
    await entry.transport.handleRequest(req, res, body);
  };

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (http.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}${MCP_HOME_PATH}`,
    port,
    token,
    lights,
    calls,
    get hanging() {
      return hangs.size;
    },
    async addTool(name, description, { notify = true } = {}) {
      tools.push({ name, description, inputSchema: { type: 'object', properties: {} } });
      if (notify) await Promise.all([...sessions.values()].map((s) => s.server.sendToolListChanged()));
    },
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      for (const end of [...hangs]) end();
      await Promise.all([...sessions.values()].map((s) => s.transport.close().catch(() => undefined)));
      sessions.clear();
    },
  };
}
