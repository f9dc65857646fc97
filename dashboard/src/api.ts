// The page's only way to the agent: same-origin fetches with the session cookie. Every failure becomes an
// ApiError carrying the agent's own message ({ error: { code, message } }), which pages show as they are.

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export interface Api {
  get<T>(path: string): Promise<T>;
  send<T>(method: 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T>;
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
    wsUrl: (path) => `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`,
  };
}
