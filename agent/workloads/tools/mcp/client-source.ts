// One MCP server (Home Assistant's `/api/mcp`, or any other) as a ToolSource for the acting assistant. It
// connects over streamable HTTP with the configured bearer token, lists the tools at start, on the server's
// `notifications/tools/list_changed` and every `refreshIntervalMs`, and runs calls with a time budget and a size
// bound. A server that is down, dies mid-call or answers slowly never stops a turn: its tools are simply absent
// while it is down (listing never throws), a call answers `ok: false` with the server's name and what happened,
// and the connection is tried again with exponential backoff in the background.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../../../lib/log.js';
import type { ToolCallContext, ToolDefinition, ToolOutcome, ToolSource } from '../types.js';
import { boundedFetch, ResponseTooLarge } from './bounded-fetch.js';
import {
  checkSettings,
  type McpServerSettings,
  type McpSourceLimits,
  mcpSourceDefaults,
} from './client-settings.js';
import { describeFailure, dropsConnection } from './failures.js';
import { type McpCallResultShape, type McpToolShape, mapTools, outcomeOf } from './results.js';
import { abortable, withBudget } from './waits.js';

export { type McpServerSettings, type McpSourceLimits, mcpSourceDefaults } from './client-settings.js';

export type McpSourceState = 'connecting' | 'connected' | 'down' | 'closed';

export interface McpSourceStatus {
  name: string;
  url: string;
  state: McpSourceState;
  tools: string[];
  /** Tools the server offers that the board left out, and why. */
  skipped: string[];
  lastError?: string;
  /** While down: when the next connection attempt is due (ms from now). */
  retryInMs?: number;
}

export interface McpToolSource extends ToolSource {
  status(): McpSourceStatus;
  /** Lists the tools again now (connecting first if needed); failures are recorded, never thrown. */
  refresh(signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export interface McpSourceDeps {
  logger?: Pick<Logger, 'info' | 'warn'>;
  /** Told whenever the tool list changed (after a refresh that found a different list). */
  onToolsChanged?: (tools: readonly ToolDefinition[]) => void;
  /** The client's name in `initialize`. */
  clientInfo?: { name: string; version: string };
}

interface Session {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

class McpClientSource implements McpToolSource {
  readonly name: string;
  readonly #url: URL;
  readonly #token: string | undefined;
  readonly #limits: McpSourceLimits;
  readonly #deps: McpSourceDeps;
  #state: McpSourceState = 'connecting';
  #session: Session | undefined;
  #connecting: Promise<Session> | undefined;
  #tools: ToolDefinition[] = [];
  #skipped: string[] = [];
  #lastError: string | undefined;
  #failures = 0;
  #retryAt = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #refreshTimer: NodeJS.Timeout | undefined;
  /** Calls in flight: an oversized answer aborts them, as the SDK would otherwise wait for the rest. */
  readonly #inFlight = new Set<AbortController>();

  constructor(settings: McpServerSettings, limits: McpSourceLimits, deps: McpSourceDeps) {
    this.#url = checkSettings(settings);
    this.name = settings.name;
    this.#token = settings.token && settings.token.length > 0 ? settings.token : undefined;
    this.#limits = limits;
    this.#deps = deps;
    if (limits.refreshIntervalMs > 0) {
      this.#refreshTimer = setInterval(() => void this.refresh(), limits.refreshIntervalMs);
      this.#refreshTimer.unref();
    }
    // Listed at start: the first turn finds the tools ready when the server is up.
    this.#connect().catch(() => undefined);
  }

  status(): McpSourceStatus {
    return {
      name: this.name,
      url: this.#url.href,
      state: this.#state,
      tools: this.#tools.map((t) => t.name),
      skipped: [...this.#skipped],
      ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
      ...(this.#state === 'down' ? { retryInMs: Math.max(0, this.#retryAt - Date.now()) } : {}),
    };
  }

  async list(signal?: AbortSignal): Promise<readonly ToolDefinition[]> {
    if (this.#state === 'closed') return [];
    if (!this.#session && this.#connecting) {
      // A connection under way is waited for, within the caller's patience: a slow server costs one wait.
      await abortable(this.#connecting, signal).catch(() => undefined);
    }
    return this.#session ? [...this.#tools] : [];
  }

  async call(tool: string, args: Record<string, unknown>, ctx: ToolCallContext): Promise<ToolOutcome> {
    const fail = (what: string): ToolOutcome => ({
      ok: false,
      content: `MCP server "${this.name}" (tool ${tool}): ${what}`,
    });
    if (this.#state === 'closed') return fail('the connection is closed (the agent is stopping)');
    let session: Session;
    try {
      session = await this.#ready(ctx.signal);
    } catch (err) {
      return fail(this.#unreachable(describeFailure(err, this.#limits.connectTimeoutMs, ctx.signal).text));
    }
    if (!this.#tools.some((t) => t.name === tool)) return fail(`it has no tool named "${tool}"`);
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await this.#callOn(session, tool, args, ctx.signal);
        return outcomeOf(result, this.#limits.maxResultChars);
      } catch (err) {
        const f = describeFailure(err, this.#limits.callTimeoutMs, ctx.signal);
        if (dropsConnection(f.kind)) this.#dropped(session, f.text);
        // A forgotten session never ran the call: one new session, one more try.
        if (f.kind === 'session' && attempt === 0) {
          try {
            session = await this.#ready(ctx.signal);
            continue;
          } catch (again) {
            return fail(this.#unreachable(describeFailure(again, this.#limits.connectTimeoutMs).text));
          }
        }
        this.#deps.logger?.warn('mcp tool call failed', { server: this.name, tool, error: f.text });
        return fail(f.kind === 'transport' ? `${f.text} during the call` : f.text);
      }
    }
  }

  async refresh(signal?: AbortSignal): Promise<void> {
    if (this.#state === 'closed') return;
    const session = this.#session;
    if (!session) {
      if (Date.now() >= this.#retryAt) await this.#connect().catch(() => undefined);
      return;
    }
    try {
      await this.#listOn(session, signal);
    } catch (err) {
      const f = describeFailure(err, this.#limits.connectTimeoutMs, signal);
      if (dropsConnection(f.kind)) this.#dropped(session, f.text);
      else this.#lastError = `listing tools: ${f.text}`;
    }
  }

  async close(): Promise<void> {
    this.#state = 'closed';
    clearTimeout(this.#retryTimer);
    clearInterval(this.#refreshTimer);
    for (const c of this.#inFlight) c.abort(new Error('the agent is stopping'));
    const session = this.#session;
    this.#session = undefined;
    this.#tools = [];
    await session?.client.close().catch(() => undefined);
  }

  /** The live session, connecting if none (and not waiting out a backoff). */
  async #ready(signal: AbortSignal | undefined): Promise<Session> {
    if (this.#session) return this.#session;
    if (this.#connecting) return abortable(this.#connecting, signal);
    const waitMs = this.#retryAt - Date.now();
    if (waitMs > 0)
      throw new Error(`${this.#lastError ?? 'it is down'}; next try in ${Math.ceil(waitMs / 1000)} s`);
    return abortable(this.#connect(), signal);
  }

  #unreachable(what: string): string {
    return `it is not reachable at ${this.#url.href}: ${what}`;
  }

  #connect(): Promise<Session> {
    if (this.#connecting) return this.#connecting;
    clearTimeout(this.#retryTimer);
    this.#state = 'connecting';
    const attempt = this.#open().then(
      (session) => {
        if (this.#state === 'closed') {
          void session.client.close().catch(() => undefined);
          throw new Error('the source was closed while connecting');
        }
        this.#session = session;
        this.#state = 'connected';
        this.#failures = 0;
        this.#retryAt = 0;
        this.#lastError = undefined;
        this.#deps.logger?.info('mcp server connected', { server: this.name, tools: this.#tools.length });
        return session;
      },
      (err: unknown) => {
        this.#failed(describeFailure(err, this.#limits.connectTimeoutMs).text);
        throw err;
      },
    );
    this.#connecting = attempt.finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #open(): Promise<Session> {
    const headers: Record<string, string> = this.#token ? { Authorization: `Bearer ${this.#token}` } : {};
    const transport = new StreamableHTTPClientTransport(this.#url, {
      requestInit: { headers },
      fetch: boundedFetch(this.#limits.maxResponseBytes, () => this.#overflow()),
      // The notification stream reconnects a few times on its own; after that the next call finds out.
      reconnectionOptions: {
        initialReconnectionDelay: this.#limits.retryMinMs,
        maxReconnectionDelay: this.#limits.retryMaxMs,
        reconnectionDelayGrowFactor: 2,
        maxRetries: 2,
      },
    });
    const client = new Client(this.#deps.clientInfo ?? { name: 'mnn-edge', version: '0' }, {
      capabilities: {},
    });
    const session: Session = { client, transport };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (this.#session === session) void this.refresh();
    });
    client.onclose = () => {
      if (this.#session === session) this.#dropped(session, 'the connection closed');
    };
    // The notification stream breaking (the server went away, or restarted and forgot us) is the first sign
    // of a dead session between turns: drop it now, so the next turn meets a fresh one or a clear "down". A
    // server that merely refuses the stream with some other status (400, 500) still answers POSTs: keep it.
    client.onerror = (err) => {
      if (this.#session !== session) return;
      const f = describeFailure(err, this.#limits.connectTimeoutMs);
      const refusedStream = err instanceof StreamableHTTPError && f.kind === 'transport';
      if (dropsConnection(f.kind) && !refusedStream) this.#dropped(session, f.text);
    };
    const budget = withBudget(undefined, this.#limits.connectTimeoutMs);
    try {
      await client.connect(transport, { signal: budget, timeout: this.#limits.connectTimeoutMs });
      await this.#listOn(session, budget);
      return session;
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    }
  }

  async #listOn(session: Session, signal: AbortSignal | undefined): Promise<void> {
    if (!session.client.getServerCapabilities()?.tools) {
      this.#setTools([], ['the server offers no tools capability']);
      return;
    }
    const found: McpToolShape[] = [];
    let cursor: string | undefined;
    // Pages until the list ends or holds more than the board would take anyway.
    for (let page = 0; page < 16 && found.length <= this.#limits.maxTools; page++) {
      const res = await session.client.listTools(cursor ? { cursor } : {}, {
        signal: withBudget(signal, this.#limits.connectTimeoutMs),
        timeout: this.#limits.connectTimeoutMs,
      });
      found.push(...(res.tools as McpToolShape[]));
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    const { tools, skipped } = mapTools(found, this.#limits);
    this.#setTools(tools, skipped);
  }

  #setTools(tools: ToolDefinition[], skipped: string[]): void {
    const before = JSON.stringify(this.#tools);
    this.#tools = tools;
    this.#skipped = skipped;
    if (skipped.length > 0)
      this.#deps.logger?.warn('mcp server: tools left out', { server: this.name, skipped });
    if (JSON.stringify(tools) !== before) this.#deps.onToolsChanged?.(tools);
  }

  async #callOn(
    session: Session,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<McpCallResultShape> {
    const own = new AbortController();
    this.#inFlight.add(own);
    try {
      return (await session.client.callTool({ name: tool, arguments: args }, undefined, {
        signal: AbortSignal.any([signal, own.signal]),
        timeout: this.#limits.callTimeoutMs,
        maxTotalTimeout: this.#limits.callTimeoutMs,
      })) as McpCallResultShape;
    } catch (err) {
      if (own.signal.aborted && own.signal.reason instanceof ResponseTooLarge) throw own.signal.reason;
      throw err;
    } finally {
      this.#inFlight.delete(own);
    }
  }

  #overflow(): void {
    for (const c of this.#inFlight) c.abort(new ResponseTooLarge(this.#limits.maxResponseBytes));
  }

  /** The session is no good: forget it and its tools, and try again after the backoff. */
  #dropped(session: Session, why: string): void {
    if (this.#session !== session) return;
    this.#session = undefined;
    void session.client.close().catch(() => undefined);
    this.#failed(why);
  }

  #failed(why: string): void {
    if (this.#state === 'closed') return;
    const had = this.#tools.length > 0;
    this.#tools = [];
    if (had) this.#deps.onToolsChanged?.([]);
    this.#state = 'down';
    this.#lastError = why;
    this.#failures++;
    const delay = Math.min(this.#limits.retryMaxMs, this.#limits.retryMinMs * 2 ** (this.#failures - 1));
    this.#retryAt = Date.now() + delay;
    this.#deps.logger?.warn('mcp server down', { server: this.name, error: why, retryInMs: delay });
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => void this.#connect().catch(() => undefined), delay);
    this.#retryTimer.unref();
  }
}

/**
 * An MCP server as a ToolSource. It starts connecting at once; `close()` ends the session and its timers.
 * Throws only on settings that can never work (an empty name, a URL that is not http(s)).
 */
export function createMcpToolSource(
  server: McpServerSettings,
  limits: Partial<McpSourceLimits> = {},
  deps: McpSourceDeps = {},
): McpToolSource {
  return new McpClientSource(server, { ...mcpSourceDefaults, ...limits }, deps);
}
