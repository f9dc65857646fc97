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
  /** A POST whose answer is read as a stream (NDJSON): the Response once its status is OK, else an ApiError. */
  stream(path: string, body: unknown, signal: AbortSignal): Promise<Response>;
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
  const open = async (init: RequestInit & { path: string }): Promise<Response> => {
    let res: Response;
    try {
      res = await fetch(init.path, { ...init, credentials: 'same-origin' });
    } catch (err) {
      // A stream the user stopped is not the agent being away.
      if (init.signal?.aborted) throw err;
      throw new ApiError(
        0,
        'unreachable',
        'The agent is not reachable; is it running and is this device on its network?',
      );
    }
    if (res.status === 401 && init.path !== '/api/login') onUnauthorized();
    return res;
  };
  const call = async <T>(init: RequestInit & { path: string }): Promise<T> => parse<T>(await open(init));
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
    stream: async (path, body, signal) => {
      const res = await open({
        path,
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json', Accept: 'application/x-ndjson' },
        signal,
      });
      if (!res.ok) await parse(res);
      return res;
    },
    wsUrl: (path) => `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`,
  };
}
