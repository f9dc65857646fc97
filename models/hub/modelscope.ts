import { createHash } from 'node:crypto';
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

// ModelScope over the HTTP API its own `modelscope` SDK calls:
//   GET /api/v1/models/{owner}/{name}/revisions                                → branches and tags with commits
//   GET /api/v1/models/{owner}/{name}/repo/files?Revision=&Recursive=true      → Path, Type, Size, Sha256
//   GET /api/v1/models/{owner}/{name}/repo?Revision=&FilePath=                 → the bytes (or a 302 to its CDN)
//   PUT /api/v1/dolphin/models                                                 → search (what the web site uses)
// Every JSON answer is wrapped as {Code, Data, Message, Success}. The token travels as the m_session_id cookie,
// as the SDK sends it, and only to the API's own origin.

export const MS_DEFAULT_ENDPOINT = 'https://www.modelscope.cn';

interface Envelope {
  Code?: unknown;
  Data?: unknown;
  Message?: unknown;
  Success?: unknown;
}

function revisionCommit(entry: Record<string, unknown>): string | undefined {
  for (const key of ['CommitId', 'Sha', 'CommitSha']) {
    const v = entry[key];
    if (typeof v === 'string' && HEX40.test(v.toLowerCase())) return v.toLowerCase();
  }
  return undefined;
}

/** The environment variable a token for gated or private repositories comes from. */
export const MS_TOKEN_VARIABLE = 'MODELSCOPE_API_TOKEN';

export class ModelScopeClient extends HubClientBase implements HubClient {
  readonly hub = 'modelscope' as const;
  readonly tokenVariable = MS_TOKEN_VARIABLE;

  constructor(options: HubClientOptions) {
    super(options, 'ModelScope endpoint');
  }

  get #auth(): Record<string, string> {
    return this.token ? { cookie: `m_session_id=${this.token}` } : {};
  }

  #fail(res: HubResponse, what: string, ref: HubRepoRef, detail?: string): MnnEdgeError {
    return hubStatusError(res, what, {
      hubTitle: 'ModelScope',
      repo: repoName(ref),
      ...(ref.revision !== undefined ? { revision: ref.revision } : {}),
      tokenVariable: this.tokenVariable,
      hasToken: this.token !== undefined,
      ...(detail !== undefined ? { detail } : {}),
    });
  }

  async #api(url: string, what: string, ref: HubRepoRef, signal?: AbortSignal): Promise<unknown> {
    const res = await hubRequest(url, { auth: this.#auth, ...(signal ? { signal } : {}) }, this.policy);
    let body: Envelope | undefined;
    try {
      body = JSON.parse(res.body.toString('utf8')) as Envelope;
    } catch {
      body = undefined;
    }
    const message = typeof body?.Message === 'string' ? body.Message : undefined;
    if (res.status !== 200) throw this.#fail(res, what, ref, message);
    if (body === undefined) parseJson(res, what);
    const code = body?.Code;
    if ((code !== undefined && code !== 200 && code !== '200') || body?.Success === false) {
      // The API sometimes reports a missing repository inside a 200 answer.
      const status = /not.?exist|not found/i.test(message ?? '') ? 404 : 500;
      throw this.#fail({ ...res, status }, what, ref, message ?? `code ${String(code)}`);
    }
    return body?.Data;
  }

  async snapshot(ref: HubRepoRef, signal?: AbortSignal): Promise<HubSnapshot> {
    const revision = ref.revision ?? 'master';
    const base = `${this.endpoint}/api/v1/models/${encodeURIComponent(ref.owner)}/${encodeURIComponent(ref.name)}`;
    let commit = HEX40.test(revision.toLowerCase()) ? revision.toLowerCase() : undefined;
    if (commit === undefined) {
      const data = (await this.#api(`${base}/revisions`, `Revisions of ${repoName(ref)}`, ref, signal)) as {
        RevisionMap?: { Branches?: unknown; Tags?: unknown };
      };
      const all = [data?.RevisionMap?.Branches, data?.RevisionMap?.Tags].flatMap((l) =>
        Array.isArray(l) ? l : [],
      );
      const entry = (all as Record<string, unknown>[]).find((e) => e?.['Revision'] === revision);
      if (entry === undefined)
        throw new MnnEdgeError('EHUBNOTFOUND', `ModelScope has no revision ${revision} of ${repoName(ref)}`, {
          status: 404,
        });
      commit = revisionCommit(entry);
    }
    const q = new URLSearchParams({ Revision: commit ?? revision, Recursive: 'true' });
    const data = (await this.#api(
      `${base}/repo/files?${q}`,
      `File list of ${repoName(ref)}`,
      ref,
      signal,
    )) as {
      Files?: unknown;
    };
    if (!Array.isArray(data?.Files))
      throw new MnnEdgeError('EHUBRESPONSE', `File list of ${repoName(ref)} has no Files array`);
    const files: HubFile[] = [];
    for (const f of data.Files as Record<string, unknown>[]) {
      if (f['Type'] === 'tree') continue;
      const path = f['Path'] ?? f['Name'];
      const size = f['Size'];
      if (typeof path !== 'string' || typeof size !== 'number')
        throw new MnnEdgeError(
          'EHUBRESPONSE',
          `File list of ${repoName(ref)} has an entry without Path or Size`,
        );
      const sha = typeof f['Sha256'] === 'string' ? f['Sha256'].toLowerCase() : undefined;
      files.push({ path, size, ...(sha !== undefined && HEX64.test(sha) ? { sha256: sha } : {}) });
    }
    // Without a commit in the revision list, the listing itself is the identity: the same files with the same
    // hashes are the same snapshot, any change makes a new one.
    commit ??= createHash('sha1')
      .update(JSON.stringify(files.map((f) => [f.path, f.size, f.sha256 ?? ''])))
      .digest('hex');
    return { ref, revision, commit, files };
  }

  #fileUrl(snapshot: HubSnapshot, path: string): string {
    const q = new URLSearchParams({
      Revision: HEX40.test(snapshot.commit) ? snapshot.commit : snapshot.revision,
      FilePath: path,
    });
    return `${this.endpoint}/api/v1/models/${encodeURIComponent(snapshot.ref.owner)}/${encodeURIComponent(snapshot.ref.name)}/repo?${q}`;
  }

  async resolveDownload(
    snapshot: HubSnapshot,
    file: HubFile,
    signal?: AbortSignal,
  ): Promise<ResolvedDownload> {
    const origin = new URL(this.endpoint).origin;
    let url = this.#fileUrl(snapshot, file.path);
    for (let hop = 0; hop <= this.policy.maxRedirects; hop++) {
      const sameOrigin = new URL(url).origin === origin;
      // One byte, not HEAD: the download endpoint is only documented for GET.
      const res = await hubRequest(
        url,
        {
          follow: false,
          headers: { range: 'bytes=0-0' },
          maxBytes: 1024,
          ...(sameOrigin ? { auth: this.#auth } : {}),
          ...(signal ? { signal } : {}),
        },
        this.policy,
      );
      if (res.status >= 300 && res.status < 400) {
        const location = header(res.headers, 'location');
        if (location === undefined)
          throw new MnnEdgeError('EHUBRESPONSE', `Redirect without a Location for ${file.path}`);
        url = checkHubUrl(
          new URL(location, url).toString(),
          this.policy,
          `Redirect for ${file.path} to`,
        ).toString();
        continue;
      }
      if (res.status !== 200 && res.status !== 206)
        throw this.#fail(res, `Download of ${file.path}`, snapshot.ref);
      return { url, headers: new URL(url).origin === origin ? this.#auth : {} };
    }
    throw new MnnEdgeError('EHUBRESPONSE', `Too many redirects for ${file.path}`);
  }

  async readSmallFile(
    snapshot: HubSnapshot,
    path: string,
    signal?: AbortSignal,
  ): Promise<Buffer | undefined> {
    const res = await hubRequest(
      this.#fileUrl(snapshot, path),
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
    const body = {
      Name: words.join(' '),
      PageSize: options.limit,
      PageNumber: 1,
      SortBy: 'Default',
      Target: '',
      SingleCriterion: [],
      Criterion:
        options.owner !== undefined
          ? [{ category: 'organizations', predicate: 'contains', values: [options.owner] }]
          : [],
    };
    const res = await hubRequest(
      `${this.endpoint}/api/v1/dolphin/models`,
      {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        auth: this.#auth,
        body: Buffer.from(JSON.stringify(body)),
        ...(signal ? { signal } : {}),
      },
      this.policy,
    );
    if (res.status !== 200)
      throw new MnnEdgeError('EHUBRESPONSE', `ModelScope search failed with HTTP ${res.status}`, {
        status: res.status,
      });
    const env = parseJson(res, 'ModelScope search') as Envelope;
    const models = (env.Data as { Model?: { Models?: unknown } } | undefined)?.Model?.Models;
    if (!Array.isArray(models))
      throw new MnnEdgeError('EHUBRESPONSE', 'ModelScope search answered no model list');
    const hits: HubSearchHit[] = [];
    for (const m of models as Record<string, unknown>[]) {
      const owner = m['Path'];
      const name = m['Name'];
      if (typeof owner !== 'string' || typeof name !== 'string') continue;
      if (options.owner !== undefined && owner.toLowerCase() !== options.owner.toLowerCase()) continue;
      const modified = m['LastUpdatedTime'];
      hits.push({
        ref: { hub: 'modelscope', owner, name },
        repo: `${owner}/${name}`,
        ...(typeof m['Downloads'] === 'number' ? { downloads: m['Downloads'] } : {}),
        ...(typeof modified === 'number' ? { lastModified: new Date(modified * 1000).toISOString() } : {}),
      });
    }
    return hits;
  }

  webUrl(ref: HubRepoRef): string {
    return `${this.endpoint}/models/${repoName(ref)}${ref.revision !== undefined ? `/files?Revision=${encodeURIComponent(ref.revision)}` : ''}`;
  }
}
