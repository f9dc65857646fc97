import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebSocket } from 'ws';
import type { Logger } from '../../lib/log.js';
import type { AuthInfo } from './auth.js';

// The one place every module hangs its endpoints: the dashboard, the OpenAI-compatible API and the voice/vision
// websockets register here at start-up (or later) and the server dispatches to them. Routes are authenticated
// unless a module says otherwise with `{ auth: false }`, so forgetting the option fails closed.
//
// Paths are literal segments, `:name` parameters (one segment, URL-decoded) and an optional trailing `*` that
// captures the rest of the path (for static files) as params['*'].
//
//   router.route('GET', '/api/models/:id', async (ctx) => ctx.json(200, await catalog.get(ctx.params.id)));
//   router.upgrade('/api/voice', (ws, ctx) => voice.attach(ws, ctx.auth));

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Record<string, string>;
  /** How the caller authenticated; undefined on `{ auth: false }` routes when no credentials were sent. */
  auth: AuthInfo | undefined;
  /** The TLS state of the listener: cookies get `Secure` when true. */
  secure: boolean;
  logger: Logger;
  /** The request body, at most http.maxUploadBytes (413 otherwise). */
  readBody(): Promise<Buffer>;
  /** The body parsed as JSON (400 on bad JSON, 415 on a non-JSON Content-Type). */
  readJson(): Promise<unknown>;
  /** Send a JSON response (with Cache-Control: no-store). */
  json(status: number, body: unknown, headers?: Record<string, string>): void;
}

export type RouteHandler = (ctx: RequestContext) => void | Promise<void>;

export interface UpgradeContext {
  req: IncomingMessage;
  url: URL;
  params: Record<string, string>;
  auth: AuthInfo | undefined;
  logger: Logger;
}

export type UpgradeHandler = (ws: WebSocket, ctx: UpgradeContext) => void;

export interface RouteOptions {
  /** Require a session cookie or bearer token (default true). */
  auth: boolean;
}

interface Pattern {
  source: string;
  segments: string[];
  wildcard: boolean;
}

interface RouteEntry {
  method: HttpMethod;
  pattern: Pattern;
  handler: RouteHandler;
  auth: boolean;
}

interface UpgradeEntry {
  pattern: Pattern;
  handler: UpgradeHandler;
  auth: boolean;
}

export type RouteMatch<T> = { entry: T; params: Record<string, string> };

const SEGMENT = /^(:[A-Za-z_][A-Za-z0-9_]*|[A-Za-z0-9._~!$&'()+,;=@-]+)$/;

function compile(path: string): Pattern {
  if (!path.startsWith('/'))
    throw new TypeError(`Route path must start with '/', got ${JSON.stringify(path)}`);
  const wildcard = path === '/*' || path.endsWith('/*');
  const body = wildcard ? path.slice(0, -2) : path;
  const segments = body.split('/').filter((s) => s.length > 0);
  for (const s of segments) {
    if (!SEGMENT.test(s))
      throw new TypeError(`Invalid route segment ${JSON.stringify(s)} in ${JSON.stringify(path)}`);
  }
  return { source: path, segments, wildcard };
}

/** Two patterns conflict when they would match the same paths: same shape, parameters in the same places. */
function shapeKey(p: Pattern): string {
  return p.segments.map((s) => (s.startsWith(':') ? ':' : s)).join('/') + (p.wildcard ? '/*' : '');
}

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function matchPattern(p: Pattern, pathSegments: readonly string[]): Record<string, string> | undefined {
  if (p.wildcard ? pathSegments.length < p.segments.length : pathSegments.length !== p.segments.length) {
    return undefined;
  }
  const params: Record<string, string> = {};
  for (const [i, seg] of p.segments.entries()) {
    const actual = pathSegments[i]!;
    if (seg.startsWith(':')) {
      const value = decode(actual);
      if (value === undefined) return undefined;
      params[seg.slice(1)] = value;
    } else if (seg !== actual) {
      return undefined;
    }
  }
  if (p.wildcard) params['*'] = pathSegments.slice(p.segments.length).join('/');
  return params;
}

// Literal segments beat parameters, which beat wildcards: `/api/models/active` wins over `/api/models/:id`.
function specificity(p: Pattern): number[] {
  return [...p.segments.map((s) => (s.startsWith(':') ? 1 : 2)), p.wildcard ? 0 : 3];
}

function compareSpecificity(a: Pattern, b: Pattern): number {
  const sa = specificity(a);
  const sb = specificity(b);
  for (let i = 0; i < Math.max(sa.length, sb.length); i++) {
    const d = (sb[i] ?? -1) - (sa[i] ?? -1);
    if (d !== 0) return d;
  }
  return 0;
}

export function splitPath(pathname: string): string[] {
  return pathname.split('/').filter((s) => s.length > 0);
}

export class HttpRouter {
  readonly #routes: RouteEntry[] = [];
  readonly #upgrades: UpgradeEntry[] = [];

  /** Register a handler; returns a function that removes it. Throws if the same method and path shape exist. */
  route(
    method: HttpMethod,
    path: string,
    handler: RouteHandler,
    options: RouteOptions = { auth: true },
  ): () => void {
    const pattern = compile(path);
    const key = shapeKey(pattern);
    if (this.#routes.some((r) => r.method === method && shapeKey(r.pattern) === key)) {
      throw new Error(`Route ${method} ${path} is already registered`);
    }
    const entry: RouteEntry = { method, pattern, handler, auth: options.auth };
    this.#routes.push(entry);
    this.#routes.sort((a, b) => compareSpecificity(a.pattern, b.pattern));
    return () => {
      const i = this.#routes.indexOf(entry);
      if (i !== -1) this.#routes.splice(i, 1);
    };
  }

  /** Register a WebSocket endpoint (served by `ws` in noServer mode on the same port). Returns a remover. */
  upgrade(path: string, handler: UpgradeHandler, options: RouteOptions = { auth: true }): () => void {
    const pattern = compile(path);
    const key = shapeKey(pattern);
    if (this.#upgrades.some((u) => shapeKey(u.pattern) === key)) {
      throw new Error(`WebSocket endpoint ${path} is already registered`);
    }
    const entry: UpgradeEntry = { pattern, handler, auth: options.auth };
    this.#upgrades.push(entry);
    this.#upgrades.sort((a, b) => compareSpecificity(a.pattern, b.pattern));
    return () => {
      const i = this.#upgrades.indexOf(entry);
      if (i !== -1) this.#upgrades.splice(i, 1);
    };
  }

  /**
   * Find the handler for a request. `allowed` lists the methods registered for the path when none matches the
   * method (for 405 and its Allow header). HEAD falls back to GET.
   */
  match(
    method: string,
    pathname: string,
  ): { found: RouteMatch<RouteEntry> | undefined; allowed: HttpMethod[]; pathAuth: boolean } {
    const segments = splitPath(pathname);
    const allowed = new Set<HttpMethod>();
    let pathAuth = true;
    let found: RouteMatch<RouteEntry> | undefined;
    let headFallback: RouteMatch<RouteEntry> | undefined;
    for (const entry of this.#routes) {
      const params = matchPattern(entry.pattern, segments);
      if (params === undefined) continue;
      if (allowed.size === 0) pathAuth = entry.auth;
      allowed.add(entry.method);
      if (entry.method === method && found === undefined) found = { entry, params };
      if (method === 'HEAD' && entry.method === 'GET' && headFallback === undefined)
        headFallback = { entry, params };
    }
    if (allowed.has('GET')) allowed.add('HEAD');
    return { found: found ?? headFallback, allowed: [...allowed], pathAuth };
  }

  matchUpgrade(pathname: string): RouteMatch<UpgradeEntry> | undefined {
    const segments = splitPath(pathname);
    for (const entry of this.#upgrades) {
      const params = matchPattern(entry.pattern, segments);
      if (params !== undefined) return { entry, params };
    }
    return undefined;
  }

  /** Registered endpoints, for the startup log and the dashboard's API listing. */
  describe(): Array<{ method: HttpMethod | 'WS'; path: string; auth: boolean }> {
    return [
      ...this.#routes.map((r) => ({ method: r.method, path: r.pattern.source, auth: r.auth })),
      ...this.#upgrades.map((u) => ({ method: 'WS' as const, path: u.pattern.source, auth: u.auth })),
    ];
  }
}
