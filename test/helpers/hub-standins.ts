// Loopback stand-ins for Hugging Face and ModelScope, for tests and the pull benchmark only. Each implements the
// endpoints models/hub/ calls, shaped as the hubs document them: HF's model info, tree and resolve endpoints
// (302 to a CDN on another port for LFS files, X-Repo-Commit, X-Linked-Etag, X-Linked-Size, ETag, Range) and
// ModelScope's revisions, repo/files, repo?FilePath= and dolphin search endpoints in its {Code, Data} envelope.
// Faults are switched on per test: cut connections, wrong hashes, hostile names, redirects elsewhere.
import { createHash } from 'node:crypto';
import { createReadStream, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';

export interface StandinFile {
  path: string;
  size: number;
  sha256: string;
  gitOid: string;
  /** Served through the CDN with its sha256 as LFS oid (graphs and weights, as MNN's repos keep them). */
  lfs: boolean;
  /** Where the bytes are: a file on disk, or in memory. */
  source: string | Buffer;
  /** What the listing claims instead of the real sha256 (a corrupted upload). */
  listedSha256?: string;
}

export interface StandinRepo {
  owner: string;
  name: string;
  commit: string;
  files: StandinFile[];
  /** Needs a token (gated or private): answered 401 without one. */
  gated?: boolean;
  /** Where resolve redirects LFS files instead of the CDN (a hostile or misconfigured hub). */
  redirectTo?: string;
  downloads?: number;
}

export interface ServedLog {
  /** Body bytes sent by the CDN and file endpoints, all requests together. */
  bytes: number;
  /** Authorization / cookie headers the CDN saw (must stay empty: tokens never leave the hub). */
  cdnCredentials: string[];
  requests: string[];
  /** First byte of every body transfer: a resumed download starts past 0. */
  starts: number[];
}

export interface Standin {
  endpoint: string;
  cdn: string;
  repos: Map<string, StandinRepo>;
  log: ServedLog;
  /** The next body transfers are cut after these many bytes (one entry per transfer). */
  cutAfter: number[];
  /** Serve file bodies at most this fast (bytes per second; 0 = as fast as possible): a slow link. */
  bytesPerSecond: number;
  /** A token the hub accepts for gated repos. */
  token: string;
  close(): Promise<void>;
}

export function gitBlobOid(bytes: Buffer): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

function isLfs(path: string): boolean {
  return /\.(mnn|weight|bin)$/.test(path);
}

/** A repository over the files of a directory (a fixture model). */
export function repoFromDir(
  owner: string,
  name: string,
  dir: string,
  extra: Partial<StandinRepo> = {},
): StandinRepo {
  const files: StandinFile[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const full = join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        const bytes = readFileSync(full);
        files.push({
          path: relative(dir, full).split('\\').join('/'),
          size: bytes.length,
          sha256: createHash('sha256').update(bytes).digest('hex'),
          gitOid: gitBlobOid(bytes),
          lfs: isLfs(entry.name),
          source: full,
        });
      }
    }
  };
  walk(dir);
  const commit = createHash('sha1')
    .update(JSON.stringify(files.map((f) => [f.path, f.sha256])))
    .digest('hex');
  return { owner, name, commit, files, ...extra };
}

export function memoryFile(path: string, bytes: Buffer, lfs = isLfs(path)): StandinFile {
  return {
    path,
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    gitOid: gitBlobOid(bytes),
    lfs,
    source: bytes,
  };
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

function chunksOf(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

/** Serves a file's bytes with single-range support, honouring the cut plan and the rate. */
function serveBytes(
  req: IncomingMessage,
  res: ServerResponse,
  file: StandinFile,
  standin: Pick<Standin, 'cutAfter' | 'log' | 'bytesPerSecond'>,
  headers: Record<string, string>,
): void {
  const size = file.size;
  let start = 0;
  let end = size - 1;
  const range = req.headers.range;
  if (range !== undefined) {
    const m = /^bytes=(\d+)-(\d*)$/.exec(range);
    if (!m || Number(m[1]) >= size) {
      res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
      return;
    }
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(size - 1, Number(m[2]));
  }
  res.writeHead(range !== undefined ? 206 : 200, {
    'content-type': 'application/octet-stream',
    'content-length': String(end - start + 1),
    'accept-ranges': 'bytes',
    ...(range !== undefined ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
    ...headers,
  });
  if (req.method === 'HEAD' || size === 0) {
    res.end();
    return;
  }
  standin.log.starts.push(start);
  const cut = standin.cutAfter.shift();
  let sent = 0;
  const rate = standin.bytesPerSecond;
  // A slow link sends small pieces with pauses between them, so a client sees steady progress.
  const piece = rate > 0 ? Math.max(1024, Math.floor(rate / 20)) : 1 << 20;
  const stream =
    typeof file.source === 'string'
      ? createReadStream(file.source, { start, end, highWaterMark: piece })
      : chunksOf(file.source.subarray(start, end + 1), piece);
  const write = async () => {
    for await (const raw of stream as AsyncIterable<Buffer>) {
      if (rate > 0) await new Promise((r) => setTimeout(r, (raw.length / rate) * 1000));
      if (res.destroyed) return;
      let chunk = raw;
      if (cut !== undefined && sent + chunk.length > cut) {
        chunk = chunk.subarray(0, Math.max(0, cut - sent));
        if (chunk.length > 0) res.write(chunk);
        standin.log.bytes += chunk.length;
        // The connection drops after these bytes (FIN once they are flushed, before the promised length): what
        // was sent arrives, as over a real link that fails after delivering it.
        res.socket?.end();
        return;
      }
      sent += chunk.length;
      standin.log.bytes += chunk.length;
      if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
      if (res.destroyed) return;
    }
    res.end();
  };
  write().catch(() => res.destroy());
}

/**
 * A file download as both hubs answer it: LFS files are a 302 to the CDN (or where the repo redirects), with the
 * hub's own headers; small files come from the hub itself.
 */
function serveFile(
  req: IncomingMessage,
  res: ServerResponse,
  standin: Standin,
  repo: StandinRepo,
  file: StandinFile,
  cdnQuery: string,
  headers: { redirect: Record<string, string>; direct: Record<string, string> },
): void {
  if (file.lfs) {
    const location = repo.redirectTo ?? `${standin.cdn}/blobs/${file.sha256}?${cdnQuery}`;
    res.writeHead(302, { ...headers.redirect, location });
    return void res.end();
  }
  serveBytes(req, res, file, standin, headers.direct);
}

/** A stand-in's state before its servers listen. */
function newStandin(repos: StandinRepo[], token: string): Standin {
  return {
    endpoint: '',
    cdn: '',
    repos: new Map(repos.map((r) => [`${r.owner}/${r.name}`, r])),
    log: { bytes: 0, cdnCredentials: [], requests: [], starts: [] },
    cutAfter: [],
    bytesPerSecond: 0,
    token,
    close: async () => {},
  };
}

/** Listens on the API and CDN ports (loopback, chosen by the OS) and wires close(). */
async function listenBoth(standin: Standin, api: Server, cdn: Server): Promise<Standin> {
  standin.endpoint = await listen(api);
  standin.cdn = await listen(cdn);
  standin.close = async () => {
    await closeServer(api);
    await closeServer(cdn);
  };
  return standin;
}

function cdnServer(standin: Pick<Standin, 'repos' | 'cutAfter' | 'log' | 'bytesPerSecond'>): Server {
  return createServer((req, res) => {
    const creds = [req.headers.authorization, req.headers.cookie].filter((v): v is string => v !== undefined);
    standin.log.cdnCredentials.push(...creds);
    standin.log.requests.push(`CDN ${req.method} ${req.url}`);
    const m = /^\/blobs\/([0-9a-f]{64})\?/.exec(req.url ?? '');
    const file = m
      ? [...standin.repos.values()].flatMap((r) => r.files).find((f) => f.sha256 === m[1])
      : undefined;
    if (!file) return void res.writeHead(404).end();
    serveBytes(req, res, file, standin, { etag: `"${file.sha256}"` });
  });
}

function repoOf(standin: Standin, owner: string, name: string): StandinRepo | undefined {
  return standin.repos.get(`${owner}/${name}`);
}

/** Hugging Face: the API and resolve endpoints on one port, LFS bytes on a CDN port. */
export async function startHuggingFaceStandin(
  repos: StandinRepo[],
  options: { pageSize?: number } = {},
): Promise<Standin> {
  const standin = newStandin(repos, 'hf_standin_token');
  const cdn = cdnServer(standin);
  const pageSize = options.pageSize ?? 3;
  const api = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    standin.log.requests.push(`${req.method} ${url.pathname}${url.search}`);
    const authorized = req.headers.authorization === `Bearer ${standin.token}`;
    const denied = (repo: StandinRepo) => repo.gated === true && !authorized;
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] === 'api' && parts[1] === 'models' && parts.length === 2) {
      const search = (url.searchParams.get('search') ?? '').toLowerCase();
      const author = url.searchParams.get('author');
      const list = [...standin.repos.values()]
        .filter(
          (r) =>
            (author === null || r.owner === author) && `${r.owner}/${r.name}`.toLowerCase().includes(search),
        )
        .slice(0, Number(url.searchParams.get('limit') ?? 20))
        .map((r) => ({
          id: `${r.owner}/${r.name}`,
          modelId: `${r.owner}/${r.name}`,
          downloads: r.downloads ?? 0,
          lastModified: '2026-11-30T00:00:00.000Z',
          tags: ['mnn'],
        }));
      return json(res, 200, list);
    }
    if (parts[0] === 'api' && parts[1] === 'models' && parts.length >= 5) {
      const repo = repoOf(standin, parts[2]!, parts[3]!);
      if (!repo) return json(res, 404, { error: 'Repository not found' }, { 'x-error-code': 'RepoNotFound' });
      if (denied(repo))
        return json(
          res,
          401,
          { error: 'Access to this repository is restricted.' },
          { 'x-error-code': 'GatedRepo' },
        );
      const rev = parts.slice(5).join('/');
      if (rev !== 'main' && rev !== repo.commit)
        return json(res, 404, { error: `Invalid rev id: ${rev}` }, { 'x-error-code': 'RevisionNotFound' });
      if (parts[4] === 'revision')
        return json(res, 200, {
          id: `${repo.owner}/${repo.name}`,
          sha: repo.commit,
          private: false,
          gated: repo.gated ? 'auto' : false,
          siblings: repo.files.map((f) => ({ rfilename: f.path })),
        });
      if (parts[4] === 'tree') {
        const cursor = Number(url.searchParams.get('cursor') ?? 0);
        const page = repo.files.slice(cursor, cursor + pageSize).map((f) => ({
          type: 'file',
          path: f.path,
          size: f.size,
          oid: f.gitOid,
          ...(f.lfs ? { lfs: { oid: f.listedSha256 ?? f.sha256, size: f.size, pointerSize: 134 } } : {}),
        }));
        const headers: Record<string, string> = {};
        if (cursor + pageSize < repo.files.length) {
          const next = new URL(url.toString());
          next.searchParams.set('cursor', String(cursor + pageSize));
          headers['link'] = `<${standin.endpoint}${next.pathname}${next.search}>; rel="next"`;
        }
        return json(res, 200, page, headers);
      }
    }
    // /{owner}/{name}/resolve/{rev}/{path}
    if (parts[2] === 'resolve' && parts.length >= 5) {
      const repo = repoOf(standin, parts[0]!, parts[1]!);
      if (!repo) return json(res, 404, { error: 'Repository not found' }, { 'x-error-code': 'RepoNotFound' });
      if (denied(repo)) return json(res, 401, { error: 'gated' }, { 'x-error-code': 'GatedRepo' });
      const rev = parts[3]!;
      if (rev !== 'main' && rev !== repo.commit)
        return json(res, 404, { error: 'rev' }, { 'x-error-code': 'RevisionNotFound' });
      const path = parts.slice(4).join('/');
      const file = repo.files.find((f) => f.path === path);
      if (!file) return json(res, 404, { error: 'Entry not found' }, { 'x-error-code': 'EntryNotFound' });
      const common = { 'x-repo-commit': repo.commit, etag: `"${file.gitOid}"` };
      return serveFile(req, res, standin, repo, file, 'expires=1&signature=standin', {
        redirect: {
          ...common,
          'x-linked-etag': `"${file.listedSha256 ?? file.sha256}"`,
          'x-linked-size': String(file.size),
        },
        direct: common,
      });
    }
    json(res, 404, { error: 'not found' });
  });
  return listenBoth(standin, api, cdn);
}

/** ModelScope: the v1 API (files list, file download with a 302 to a CDN port for LFS files) and search. */
export async function startModelScopeStandin(repos: StandinRepo[]): Promise<Standin> {
  const standin = newStandin(repos, 'ms-standin-token');
  const cdn = cdnServer(standin);
  const ok = (data: unknown) => ({
    Code: 200,
    Data: data,
    Message: 'success',
    Success: true,
    RequestId: 'standin',
  });
  const api = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    standin.log.requests.push(`${req.method} ${url.pathname}${url.search}`);
    const authorized = (req.headers.cookie ?? '').split(/;\s*/).includes(`m_session_id=${standin.token}`);
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (req.method === 'PUT' && url.pathname === '/api/v1/dolphin/models') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          Name?: string;
          PageSize?: number;
          Criterion?: { category: string; values: string[] }[];
        };
        const orgs = body.Criterion?.find((c) => c.category === 'organizations')?.values;
        const words = (body.Name ?? '').toLowerCase().split(/\s+/).filter(Boolean);
        const models = [...standin.repos.values()]
          .filter(
            (r) =>
              (orgs === undefined || orgs.includes(r.owner)) &&
              words.every((w) => r.name.toLowerCase().includes(w)),
          )
          .slice(0, body.PageSize ?? 20)
          .map((r) => ({
            Path: r.owner,
            Name: r.name,
            Downloads: r.downloads ?? 0,
            LastUpdatedTime: 1_764_460_800,
          }));
        json(res, 200, ok({ Model: { Models: models, TotalCount: models.length } }));
      });
      return;
    }
    if (parts[0] !== 'api' || parts[1] !== 'v1' || parts[2] !== 'models' || parts.length < 5)
      return json(res, 404, { Code: 10010205, Message: 'not found', Success: false });
    const repo = repoOf(standin, parts[3]!, parts[4]!);
    if (!repo)
      return json(res, 404, {
        Code: 10010205,
        Message: `model ${parts[3]}/${parts[4]} not exists`,
        Success: false,
      });
    if (repo.gated && !authorized)
      return json(res, 401, { Code: 10010101, Message: 'please login first', Success: false });
    const tail = parts.slice(5).join('/');
    if (tail === 'revisions')
      return json(
        res,
        200,
        ok({
          RevisionMap: {
            Branches: [{ Revision: 'master', CommitId: repo.commit, CreatedAt: 1_764_460_800 }],
            Tags: [],
          },
        }),
      );
    const revision = url.searchParams.get('Revision') ?? 'master';
    if (revision !== 'master' && revision !== repo.commit)
      return json(res, 404, { Code: 10010205, Message: `revision ${revision} not exists`, Success: false });
    if (tail === 'repo/files')
      return json(
        res,
        200,
        ok({
          Files: repo.files.map((f) => ({
            Name: f.path.split('/').at(-1),
            Path: f.path,
            Type: 'blob',
            Size: f.size,
            Sha256: f.listedSha256 ?? f.sha256,
            Revision: repo.commit,
            IsLFS: f.lfs,
          })),
          LatestCommitter: { Id: repo.commit },
        }),
      );
    if (tail === 'repo') {
      const path = url.searchParams.get('FilePath') ?? '';
      const file = repo.files.find((f) => f.path === path);
      if (!file)
        return json(res, 404, { Code: 10010205, Message: `file ${path} not exists`, Success: false });
      return serveFile(req, res, standin, repo, file, 'auth_key=standin', { redirect: {}, direct: {} });
    }
    json(res, 404, { Code: 10010205, Message: 'not found', Success: false });
  });
  return listenBoth(standin, api, cdn);
}

export function fileSize(path: string): number {
  return statSync(path).size;
}
