import { MnnEdgeError } from '../../lib/errors.js';
import { hubStatusError } from './auth-errors.js';
import {
  checkHubUrl,
  HubClientBase,
  type HubClientOptions,
  type HubResponse,
  header,
  hubRequest,
  parseJson,
} from './http.js';
import {
  HEX40,
  HEX64,
  type HubClient,
  type HubFile,
  type HubRepoRef,
  type HubSearchHit,
  type HubSnapshot,
  type ResolvedDownload,
  repoName,
} from './types.js';

// Hugging Face over its public HTTP API, the calls huggingface_hub makes:
//   GET  /api/models/{repo}/revision/{rev}           → sha (the commit), gated/private
//   GET  /api/models/{repo}/tree/{commit}?recursive=1 → path, size, oid, lfs.oid (sha256); paged by Link
//   HEAD /{repo}/resolve/{commit}/{path}              → 302 to the CDN for LFS files, X-Repo-Commit,
//                                                       X-Linked-Etag (sha256), X-Linked-Size; 200 otherwise
//   GET  /api/models?search=&author=&sort=downloads   → search

export const HF_DEFAULT_ENDPOINT = 'https://huggingface.co';

interface TreeEntry {
  type?: unknown;
  path?: unknown;
  size?: unknown;
  oid?: unknown;
  lfs?: { oid?: unknown; size?: unknown };
}

function enc(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

/** `"<sha256>"` or `W/"…"` → the hex inside, when it is one. */
function etagHash(value: string | undefined): string | undefined {
  const v = value?.replace(/^W\//, '').replace(/"/g, '').trim().toLowerCase();
  return v !== undefined && HEX64.test(v) ? v : undefined;
}

function nextLink(res: HubResponse): string | undefined {
  const link = header(res.headers, 'link');
  const m = link ? /<([^>]+)>\s*;\s*rel="?next"?/.exec(link) : null;
  return m?.[1];
}

/** The environment variable a token for gated or private repositories comes from. */
export const HF_TOKEN_VARIABLE = 'HF_TOKEN';

export class HuggingFaceClient extends HubClientBase implements HubClient {
  readonly hub = 'huggingface' as const;
  readonly tokenVariable = HF_TOKEN_VARIABLE;

  constructor(options: HubClientOptions) {
    super(options, 'Hugging Face endpoint');
  }

  get #auth(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }

  #fail(res: HubResponse, what: string, ref: HubRepoRef): MnnEdgeError {
    const detail = header(res.headers, 'x-error-message') ?? errorOf(res);
    return hubStatusError(res, what, {
      hubTitle: 'Hugging Face',
      repo: repoName(ref),
      ...(ref.revision !== undefined ? { revision: ref.revision } : {}),
      tokenVariable: this.tokenVariable,
      hasToken: this.token !== undefined,
      ...(detail !== undefined ? { detail } : {}),
    });
  }

  async snapshot(ref: HubRepoRef, signal?: AbortSignal): Promise<HubSnapshot> {
    const revision = ref.revision ?? 'main';
    const base = `${this.endpoint}/api/models/${enc(repoName(ref))}`;
    const info = await hubRequest(
      `${base}/revision/${encodeURIComponent(revision)}`,
      { auth: this.#auth, ...(signal ? { signal } : {}) },
      this.policy,
    );
    if (info.status !== 200) throw this.#fail(info, `Model info of ${repoName(ref)}`, ref);
    const body = parseJson(info, `Model info of ${repoName(ref)}`) as { sha?: unknown };
    const commit = typeof body.sha === 'string' ? body.sha.toLowerCase() : '';
    if (!HEX40.test(commit))
      throw new MnnEdgeError('EHUBRESPONSE', `Hugging Face gave no commit for ${repoName(ref)}@${revision}`);
    const files: HubFile[] = [];
    let url: string | undefined = `${base}/tree/${commit}?recursive=true&expand=false`;
    for (let page = 0; url !== undefined; page++) {
      if (page > 1000) throw new MnnEdgeError('EHUBRESPONSE', `File list of ${repoName(ref)} does not end`);
      const res = await hubRequest(url, { auth: this.#auth, ...(signal ? { signal } : {}) }, this.policy);
      if (res.status !== 200) throw this.#fail(res, `File list of ${repoName(ref)}`, ref);
      const entries = parseJson(res, `File list of ${repoName(ref)}`);
      if (!Array.isArray(entries))
        throw new MnnEdgeError('EHUBRESPONSE', `File list of ${repoName(ref)} is not a JSON array`);
      for (const e of entries as TreeEntry[]) {
        if (e.type !== 'file') continue;
        if (typeof e.path !== 'string' || typeof e.size !== 'number')
          throw new MnnEdgeError(
            'EHUBRESPONSE',
            `File list of ${repoName(ref)} has an entry without path or size`,
          );
        const lfsOid = typeof e.lfs?.oid === 'string' ? e.lfs.oid.toLowerCase() : undefined;
        const size = typeof e.lfs?.size === 'number' ? e.lfs.size : e.size;
        const oid = typeof e.oid === 'string' ? e.oid.toLowerCase() : undefined;
        files.push({
          path: e.path,
          size,
          ...(lfsOid !== undefined && HEX64.test(lfsOid) ? { sha256: lfsOid } : {}),
          ...(lfsOid === undefined && oid !== undefined && HEX40.test(oid) ? { gitOid: oid } : {}),
        });
      }
      const next = nextLink(res);
      url = next === undefined ? undefined : new URL(next, this.endpoint).toString();
      // The next page must come from the hub itself, not wherever a header points.
      if (url !== undefined && new URL(url).origin !== new URL(this.endpoint).origin)
        throw new MnnEdgeError(
          'EHUBRESPONSE',
          `File list of ${repoName(ref)} pages to another host: ${new URL(url).host}`,
        );
    }
    return { ref, revision, commit, files };
  }

  async resolveDownload(
    snapshot: HubSnapshot,
    file: HubFile,
    signal?: AbortSignal,
  ): Promise<ResolvedDownload> {
    const origin = new URL(this.endpoint).origin;
    let url = `${this.endpoint}/${enc(repoName(snapshot.ref))}/resolve/${snapshot.commit}/${enc(file.path)}`;
    let sha256: string | undefined;
    let size: number | undefined;
    for (let hop = 0; hop <= this.policy.maxRedirects; hop++) {
      const sameOrigin = new URL(url).origin === origin;
      const res = await hubRequest(
        url,
        {
          method: 'HEAD',
          follow: false,
          ...(sameOrigin ? { auth: this.#auth } : {}),
          ...(signal ? { signal } : {}),
        },
        this.policy,
      );
      const h = res.headers;
      const repoCommit = header(h, 'x-repo-commit')?.toLowerCase();
      if (repoCommit !== undefined && repoCommit !== snapshot.commit)
        throw new MnnEdgeError(
          'EHUBRESPONSE',
          `Hugging Face served ${file.path} from commit ${repoCommit}, not the listed ${snapshot.commit}`,
        );
      sha256 ??= etagHash(header(h, 'x-linked-etag'));
      const linkedSize = Number(header(h, 'x-linked-size'));
      if (Number.isSafeInteger(linkedSize)) size ??= linkedSize;
      if (res.status >= 300 && res.status < 400) {
        const location = header(h, 'location');
        if (location === undefined)
          throw new MnnEdgeError('EHUBRESPONSE', `Redirect without a Location for ${file.path}`);
        url = checkHubUrl(
          new URL(location, url).toString(),
          this.policy,
          `Redirect for ${file.path} to`,
        ).toString();
        continue;
      }
      if (res.status !== 200) throw this.#fail(res, `Download of ${file.path}`, snapshot.ref);
      const length = Number(header(h, 'content-length'));
      if (Number.isSafeInteger(length)) size ??= length;
      // A non-LFS file's ETag is its git blob id; an LFS file served directly carries its sha256.
      sha256 ??= etagHash(header(h, 'etag'));
      return {
        url,
        headers: new URL(url).origin === origin ? this.#auth : {},
        ...(sha256 !== undefined ? { sha256 } : {}),
        ...(size !== undefined ? { size } : {}),
      };
    }
    throw new MnnEdgeError('EHUBRESPONSE', `Too many redirects for ${file.path}`);
  }

  async readSmallFile(
    snapshot: HubSnapshot,
    path: string,
    signal?: AbortSignal,
  ): Promise<Buffer | undefined> {
    const res = await hubRequest(
      `${this.endpoint}/${enc(repoName(snapshot.ref))}/resolve/${snapshot.commit}/${enc(path)}`,
      { auth: this.#auth, maxBytes: 4 * 1024 * 1024, ...(signal ? { signal } : {}) },
      this.policy,
    );
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw this.#fail(res, `Reading ${path}`, snapshot.ref);
    return res.body;
  }

  async search(
    words: string[],
    options: { owner?: string; limit: number },
    signal?: AbortSignal,
  ): Promise<HubSearchHit[]> {
    const q = new URLSearchParams({ sort: 'downloads', direction: '-1', limit: String(options.limit) });
    if (words.length > 0) q.set('search', words.join(' '));
    if (options.owner !== undefined) q.set('author', options.owner);
    const res = await hubRequest(
      `${this.endpoint}/api/models?${q}`,
      { auth: this.#auth, ...(signal ? { signal } : {}) },
      this.policy,
    );
    if (res.status !== 200)
      throw new MnnEdgeError('EHUBRESPONSE', `Hugging Face search failed with HTTP ${res.status}`, {
        status: res.status,
      });
    const list = parseJson(res, 'Hugging Face search');
    if (!Array.isArray(list))
      throw new MnnEdgeError('EHUBRESPONSE', 'Hugging Face search did not answer a list');
    const hits: HubSearchHit[] = [];
    for (const m of list as {
      id?: unknown;
      modelId?: unknown;
      downloads?: unknown;
      lastModified?: unknown;
    }[]) {
      const id = typeof m.id === 'string' ? m.id : typeof m.modelId === 'string' ? m.modelId : undefined;
      const [owner, name, extra] = id?.split('/') ?? [];
      if (owner === undefined || name === undefined || extra !== undefined) continue;
      hits.push({
        ref: { hub: 'huggingface', owner, name },
        repo: `${owner}/${name}`,
        ...(typeof m.downloads === 'number' ? { downloads: m.downloads } : {}),
        ...(typeof m.lastModified === 'string' ? { lastModified: m.lastModified } : {}),
      });
    }
    return hits;
  }

  webUrl(ref: HubRepoRef): string {
    return `${this.endpoint}/${repoName(ref)}${ref.revision !== undefined ? `/tree/${ref.revision}` : ''}`;
  }
}

function errorOf(res: HubResponse): string | undefined {
  try {
    const body = JSON.parse(res.body.toString('utf8')) as { error?: unknown };
    return typeof body.error === 'string' ? body.error : undefined;
  } catch {
    return undefined;
  }
}
