// The page's only way to the agent: same-origin fetches with the session cookie. Every failure becomes an
// ApiError carrying the agent's own message ({ error: { code, message } }), which pages show as they are.

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  /** The resource's current revision when the agent sent one (a 409 on /api/config names it). */
  readonly etag: string | undefined;
  constructor(status: number, code: string, message: string, etag?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.etag = etag ?? undefined;
  }
}

/** `"7"` (or W/"7") → 7; undefined when absent or not a revision number. */
export function revisionOf(etag: string | null | undefined): number | undefined {
  if (!etag) return undefined;
  const n = Number(etag.replace(/^W\//, '').replace(/"/g, ''));
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

export interface Api {
  get<T>(path: string): Promise<T>;
  send<T>(method: 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T>;
  /** A merge patch guarded by the revision it was made against (If-Match): a 409 when someone changed it first. */
  patch<T>(path: string, body: unknown, revision: number): Promise<T>;
  /** ws:// or wss:// URL of a path on this origin. */
  wsUrl(path: string): string;
}

async function parse<T>(res: Response): Promise<T> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const err = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new ApiError(
      res.status,
      err?.code ?? `http_${res.status}`,
      err?.message ?? `${res.status} ${res.statusText}`,
      res.headers.get('etag') ?? undefined,
    );
  }
  return body as T;
}

export function createApi(onUnauthorized: () => void): Api {
  const call = async <T>(init: RequestInit & { path: string }): Promise<T> => {
    let res: Response;
    try {
      res = await fetch(init.path, { ...init, credentials: 'same-origin' });
    } catch {
      throw new ApiError(
        0,
        'unreachable',
        'The agent is not reachable; is it running and is this device on its network?',
      );
    }
    if (res.status === 401 && init.path !== '/api/login') onUnauthorized();
    return parse<T>(res);
  };
  return {
    get: (path) => call({ path, method: 'GET' }),
    send: (method, path, body) =>
      call({
        path,
        method,
        ...(body === undefined
          ? {}
          : { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } }),
      }),
    patch: (path, body, revision) =>
      call({
        path,
        method: 'PATCH',
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json', 'If-Match': `"${revision}"` },
      }),
    wsUrl: (path) => `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`,
  };
}
