import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { MnnEdgeError } from '../../lib/errors.js';
import { httpsRequest } from '../../lib/lazy-https.js';

// The hubs' metadata calls: a few small requests with redirects followed by hand, because the rules are ours:
// only https (plain http only to this machine's loopback, and only where allowed for tests and local mirrors),
// and the token never leaves the origin it was meant for (a hub's CDN gets a signed URL, not our token).

export interface HubHttpPolicy {
  allowLoopbackHttp: boolean;
  /** PEM CA bundle for a mirror with a private CA. */
  ca?: string;
  timeoutMs: number;
  maxRedirects: number;
}

export const defaultHubHttpPolicy: HubHttpPolicy = {
  allowLoopbackHttp: false,
  timeoutMs: 30_000,
  maxRedirects: 5,
};

export interface HubHop {
  url: string;
  status: number;
  headers: IncomingHttpHeaders;
}

export interface HubResponse {
  /** Every response on the way, the last one included. */
  hops: HubHop[];
  status: number;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/** Refuses any URL the hub client must not talk to; `what` says where it came from, for the error. */
export function checkHubUrl(url: string, policy: HubHttpPolicy, what: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new MnnEdgeError('EHUBURL', `${what} is not a URL: ${JSON.stringify(url.slice(0, 200))}`);
  }
  if (parsed.username || parsed.password)
    throw new MnnEdgeError('EHUBURL', `${what} carries credentials in the URL; refused: ${parsed.host}`);
  if (parsed.protocol === 'https:') return parsed;
  if (parsed.protocol === 'http:' && policy.allowLoopbackHttp && isLoopback(parsed.hostname)) return parsed;
  throw new MnnEdgeError(
    'EHUBURL',
    `${what} ${parsed.protocol}//${parsed.host} is refused: hubs are reached over https only` +
      (parsed.protocol === 'http:' && isLoopback(parsed.hostname)
        ? ' (plain http to loopback needs models.sources.allowLoopbackHttp)'
        : ''),
    { url: `${parsed.protocol}//${parsed.host}${parsed.pathname}` },
  );
}

function once(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
  policy: HubHttpPolicy,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      url,
      {
        method,
        headers: {
          'user-agent': 'mnn-edge',
          ...headers,
          ...(body ? { 'content-length': String(body.length) } : {}),
        },
        ...(signal ? { signal } : {}),
        ...(policy.ca ? { ca: policy.ca } : {}),
      },
      (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        // Redirect and error bodies are not needed; a download's body is the downloader's business.
        if (method === 'HEAD' || (status >= 300 && status < 400)) {
          res.resume();
          return resolve({ status, headers: res.headers, body: Buffer.alloc(0) });
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) {
            res.destroy();
            reject(
              new MnnEdgeError(
                'EHUBRESPONSE',
                `${method} ${url.origin}${url.pathname} answered more than ${maxBytes} bytes`,
              ),
            );
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => resolve({ status, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.setTimeout(policy.timeoutMs, () => req.destroy(new Error(`no answer within ${policy.timeoutMs} ms`)));
    req.on('error', (err) =>
      reject(
        signal?.aborted
          ? signal.reason
          : new MnnEdgeError('EHUBUNREACHABLE', `Cannot reach ${url.origin}: ${err.message}`, {
              code: (err as { code?: unknown }).code,
            }),
      ),
    );
    req.end(body);
  });
}

export interface HubRequest {
  method?: 'GET' | 'HEAD' | 'PUT';
  /** Sent only to the origin of `url`: dropped when a redirect leaves it. */
  auth?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Buffer;
  /** Stop at the first redirect instead of following it (the caller wants its headers). */
  follow?: boolean;
  maxBytes?: number;
  signal?: AbortSignal;
}

export async function hubRequest(url: string, req: HubRequest, policy: HubHttpPolicy): Promise<HubResponse> {
  let current = checkHubUrl(url, policy, 'Hub endpoint');
  const origin = current.origin;
  const hops: HubHop[] = [];
  let method = req.method ?? 'GET';
  let body = req.body;
  for (let hop = 0; ; hop++) {
    const headers = { ...req.headers, ...(current.origin === origin ? req.auth : {}) };
    const res = await once(
      current,
      method,
      headers,
      body,
      policy,
      req.maxBytes ?? 16 * 1024 * 1024,
      req.signal,
    );
    hops.push({ url: current.toString(), status: res.status, headers: res.headers });
    const location = res.headers.location;
    if (res.status >= 300 && res.status < 400 && location !== undefined && req.follow !== false) {
      if (hop >= policy.maxRedirects)
        throw new MnnEdgeError(
          'EHUBRESPONSE',
          `Too many redirects from ${origin} (more than ${policy.maxRedirects})`,
        );
      current = checkHubUrl(new URL(location, current).toString(), policy, 'Redirect to');
      if (res.status === 303) {
        method = 'GET';
        body = undefined;
      }
      continue;
    }
    return { hops, status: res.status, url: current.toString(), headers: res.headers, body: res.body };
  }
}

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export function parseJson(res: HubResponse, what: string): unknown {
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch (err) {
    throw new MnnEdgeError(
      'EHUBRESPONSE',
      `${what}: the hub answered something that is not JSON (${(err as Error).message})`,
    );
  }
}

export interface HubClientOptions {
  endpoint: string;
  token?: string;
  policy: HubHttpPolicy;
}

/** What every hub client holds: its endpoint (checked against the HTTP policy once), the token, the policy. */
export abstract class HubClientBase {
  readonly endpoint: string;
  protected readonly token: string | undefined;
  protected readonly policy: HubHttpPolicy;

  constructor(options: HubClientOptions, what: string) {
    this.endpoint = options.endpoint.replace(/\/+$/, '');
    this.token = options.token;
    this.policy = options.policy;
    checkHubUrl(this.endpoint, this.policy, what);
  }
}
