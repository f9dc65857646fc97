import type { HubName } from '../manifest/types.js';

// What the pull, search and recommend code needs from a model hub, whichever hub it is.

export interface HubRepoRef {
  hub: HubName;
  owner: string;
  name: string;
  /** Branch, tag or commit; undefined = the hub's default branch. */
  revision?: string;
}

export interface HubFile {
  /** Path inside the repository, '/'-separated (checked by the caller before any use). */
  path: string;
  size: number;
  /** sha256 the hub states for the bytes (HF LFS oid, ModelScope Sha256). */
  sha256?: string;
  /** Git blob id the hub states (HF non-LFS files), checked after download. */
  gitOid?: string;
}

export interface HubSnapshot {
  ref: HubRepoRef;
  /** The revision as asked, or the hub's default branch. */
  revision: string;
  /** The commit the revision resolved to. */
  commit: string;
  files: HubFile[];
}

/** A download the hub resolved: the URL to fetch with Range (after redirects), and headers for it. */
export interface ResolvedDownload {
  url: string;
  headers: Record<string, string>;
  /** sha256 the download endpoint itself stated (HF X-Linked-Etag), when the listing did not. */
  sha256?: string;
  size?: number;
}

export interface HubSearchHit {
  ref: HubRepoRef;
  /** owner/name */
  repo: string;
  downloads?: number;
  lastModified?: string;
}

export interface HubClient {
  readonly hub: HubName;
  readonly endpoint: string;
  /** The environment variable a token comes from, named in errors about gated or private repos. */
  readonly tokenVariable: string;
  snapshot(ref: HubRepoRef, signal?: AbortSignal): Promise<HubSnapshot>;
  resolveDownload(snapshot: HubSnapshot, file: HubFile, signal?: AbortSignal): Promise<ResolvedDownload>;
  /** A small file (config.json) read whole; undefined when the repository has none. */
  readSmallFile(snapshot: HubSnapshot, path: string, signal?: AbortSignal): Promise<Buffer | undefined>;
  search(
    words: string[],
    options: { owner?: string; limit: number },
    signal?: AbortSignal,
  ): Promise<HubSearchHit[]>;
  /** The repository's page for people. */
  webUrl(ref: HubRepoRef): string;
}

export function repoName(ref: HubRepoRef): string {
  return `${ref.owner}/${ref.name}`;
}

/** A git commit id (and git blob id) as the hubs write them. */
export const HEX40 = /^[0-9a-f]{40}$/;
/** A sha256 digest in lowercase hex. */
export const HEX64 = /^[0-9a-f]{64}$/;
