import { createHash } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { type Downloader, type DownloadResult, freeBytesIn } from '../../lib/download/downloader.js';
import { DownloadRejection } from '../../lib/download/rejection.js';
import { writeFileDurable } from '../../lib/durable-fs.js';
import { MnnEdgeError } from '../../lib/errors.js';
import { deriveManifest } from '../manifest/derive.js';
import { compareSemver } from '../manifest/schema.js';
import {
  type HubProvenance,
  type HubProvenanceFile,
  MANIFEST_FILE,
  type ModelManifest,
} from '../manifest/types.js';
import type { InstalledPackage, ModelRef, ModelStore } from '../store/model-store.js';
import { checkListing, describeExport, requireMnnExport } from './export-check.js';
import { HubPullError } from './pull-error.js';
import type { HubClient, HubFile, HubRepoRef, HubSnapshot } from './types.js';
import { repoName } from './types.js';

// `models pull hf://…|ms://…`: list the revision, refuse what is not a safe MNN export, check the disk, fetch
// every file with Range resume and its hash checked, derive the manifest with the provenance, and install
// through the store's crash-safe import. Files land in <workRoot>/<hub>-<owner>-<name>-<commit>/ first, so a cut
// (or a killed process) resumes where it stopped; the store only ever sees a complete, verified set.

export interface HubPullDeps {
  client: HubClient;
  store: ModelStore;
  downloader: Downloader;
  /** Where downloads wait until they are complete; kept across runs for resume. */
  workRoot: string;
  /** Free space that must remain after the pull (the OTA downloader's headroom). */
  headroomBytes: number;
  freeBytes?: (dir: string) => number;
  now?: () => Date;
}

export type PullPhase = 'listing' | 'downloading' | 'installing' | 'done';

export interface PullProgress {
  phase: PullPhase;
  file?: string;
  fileIndex: number;
  fileCount: number;
  /** Bytes of all files present so far (resumed ones included). */
  done: number;
  total: number;
}

export interface HubPullOptions {
  id?: string;
  version?: string;
  signal?: AbortSignal;
  onProgress?: (p: PullProgress) => void;
}

export interface HubPullResult {
  status: 'installed' | 'unchanged';
  ref: ModelRef;
  repo: string;
  commit: string;
  totalBytes: number;
  /** Bytes fetched over the network in this run (the rest was already there). */
  fetchedBytes: number;
  skipped: string[];
  provenance: HubProvenance;
}

export function provenanceOf(pkg: InstalledPackage): HubProvenance | undefined {
  return pkg.manifest.provenance;
}

/** An installed package pulled from this repository at this commit, if any. */
export function installedFromHub(
  store: ModelStore,
  hub: HubRepoRef['hub'],
  repo: string,
  commit?: string,
): InstalledPackage[] {
  return store.list().filter((p) => {
    const prov = p.manifest.provenance;
    return (
      prov !== undefined &&
      prov.hub === hub &&
      prov.repo === repo &&
      (commit === undefined || prov.commit === commit)
    );
  });
}

function idFor(ref: HubRepoRef): string {
  const id = ref.name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 64);
  if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(id))
    throw new HubPullError('EUSAGE', `Cannot make a model id from ${JSON.stringify(ref.name)}; pass --id`);
  return id;
}

/** The next version of `id`: its newest installed version with the patch number raised, or 1.0.0. */
function nextVersion(store: ModelStore, id: string): string {
  const versions = store
    .list()
    .filter((p) => p.id === id)
    .map((p) => p.version)
    .sort(compareSemver);
  const newest = versions.at(-1);
  if (newest === undefined) return '1.0.0';
  const [major, minor, patch] = newest.replace(/-.*$/, '').split('.').map(Number);
  return `${major}.${minor}.${(patch ?? 0) + 1}`;
}

async function gitBlobSha1(path: string, size: number): Promise<string> {
  const h = createHash('sha1');
  h.update(`blob ${size}\0`);
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) h.update(chunk);
  return h.digest('hex');
}

function presentBytes(dest: string): number {
  for (const p of [dest, `${dest}.part`]) {
    try {
      return statSync(p).size;
    } catch {
      // not there
    }
  }
  return 0;
}

export function workDirFor(workRoot: string, snapshot: HubSnapshot): string {
  const { hub, owner, name } = snapshot.ref;
  return join(workRoot, `${hub}-${owner}-${name}-${snapshot.commit.slice(0, 16)}`);
}

interface FileFetch {
  client: HubClient;
  snapshot: HubSnapshot;
  downloader: Downloader;
  work: string;
  signal: AbortSignal | undefined;
}

/** One listed file into the work directory, resumed where a cut left it and checked against the hub's hashes
 *  (sha256, else the git blob id); its provenance entry and the bytes fetched over the network this time. */
async function fetchHubFile(
  file: HubFile,
  f: FileFetch,
): Promise<{ entry: HubProvenanceFile; fetched: number }> {
  const dest = join(f.work, file.path);
  mkdirSync(dirname(dest), { recursive: true });
  let sha256: string;
  let fetched = 0;
  let check: HubProvenanceFile['check'];
  if (file.size === 0) {
    closeSync(openSync(dest, 'w'));
    sha256 = createHash('sha256').digest('hex');
    check =
      file.sha256 !== undefined ? 'hub-sha256' : file.gitOid !== undefined ? 'git-blob-sha1' : 'computed';
    if (file.sha256 !== undefined && file.sha256 !== sha256) throw mismatch(file.path, file.sha256, sha256);
  } else {
    const resolved = await f.client.resolveDownload(f.snapshot, file, f.signal);
    if (resolved.size !== undefined && resolved.size !== file.size)
      throw new HubPullError(
        'EVERIFY',
        `${file.path} is ${resolved.size} bytes at the download URL but listed as ${file.size}; nothing installed`,
        { entry: file.path },
      );
    const expected = file.sha256 ?? resolved.sha256;
    const had = presentBytes(dest);
    let result: DownloadResult;
    try {
      result = await f.downloader.fetch(
        {
          url: resolved.url,
          dest,
          length: file.size,
          ...(expected !== undefined ? { sha256: expected } : {}),
          headers: resolved.headers,
        },
        f.signal ? { signal: f.signal } : {},
      );
    } catch (err) {
      if (err instanceof DownloadRejection && err.reason === 'hash-mismatch')
        throw mismatch(
          file.path,
          expected!,
          String((err.details as { actual?: unknown } | undefined)?.actual ?? '?'),
        );
      if (err instanceof DownloadRejection)
        throw new HubPullError('EVERIFY', `${file.path}: ${err.message}; nothing installed`, {
          entry: file.path,
        });
      throw err;
    }
    fetched = result.bytes - Math.min(had, result.resumedFrom);
    sha256 = result.sha256;
    check = expected !== undefined ? 'hub-sha256' : 'computed';
    if (expected === undefined && file.gitOid !== undefined) {
      const oid = await gitBlobSha1(dest, file.size);
      if (oid !== file.gitOid) {
        rmSync(dest, { force: true });
        throw new HubPullError(
          'EVERIFY',
          `${file.path} does not match the hub's git blob id (${oid} instead of ${file.gitOid}); nothing installed`,
          { entry: file.path },
        );
      }
      check = 'git-blob-sha1';
    }
  }
  return {
    entry: {
      path: file.path,
      sha256,
      check,
      ...(file.gitOid !== undefined ? { gitOid: file.gitOid } : {}),
    },
    fetched,
  };
}

/** The package manifest of a complete download: derived from the files, with the hub, commit and hashes as its
 *  provenance (unsigned: trusted on first use). */
function hubManifest(
  work: string,
  files: HubFile[],
  provFiles: HubProvenanceFile[],
  o: {
    client: HubClient;
    ref: HubRepoRef;
    snapshot: HubSnapshot;
    repo: string;
    id: string;
    version: string;
    pulledAt: Date;
  },
): { manifest: ModelManifest; provenance: HubProvenance } {
  const [configJson, llmConfigJson] = [join(work, 'config.json'), join(work, 'llm_config.json')].map((p) =>
    existsSync(p) ? readBuffer(p) : undefined,
  );
  const described = describeExport(o.repo, files, configJson, llmConfigJson);
  const provenance: HubProvenance = {
    hub: o.client.hub,
    repo: o.repo,
    revision: o.snapshot.revision,
    commit: o.snapshot.commit,
    endpoint: o.client.endpoint,
    pulledAt: o.pulledAt.toISOString(),
    trust: 'unsigned-tofu',
    files: provFiles,
  };
  const derived = deriveManifest(
    work,
    provFiles.map((f) => ({
      path: f.path,
      length: files.find((x) => x.path === f.path)!.size,
      sha256: f.sha256,
    })),
    { id: o.id, version: o.version, ...(described.task !== undefined ? { task: described.task } : {}) },
  );
  const manifest: ModelManifest = {
    ...derived,
    source: { url: o.client.webUrl({ ...o.ref, revision: o.snapshot.commit }), upstream: o.repo },
    provenance,
  };
  manifest.derived?.assumptions.push(
    `pulled from ${o.client.hub} ${o.repo}@${o.snapshot.commit}: unsigned, trusted on first use`,
  );
  return { manifest, provenance };
}

/** Refused before the first byte: what is still to fetch (the files move into the store, no second copy). */
function requireSpace(files: HubFile[], work: string, repo: string, deps: HubPullDeps): void {
  const missing = files.reduce((a, f) => a + Math.max(0, f.size - presentBytes(join(work, f.path))), 0);
  const needed = missing + deps.headroomBytes;
  const free = (deps.freeBytes ?? freeBytesIn)(deps.workRoot);
  if (free < needed)
    throw new HubPullError(
      'ENOSPC',
      `Not enough disk space for ${repo}: ${needed} bytes needed (${missing} to download, ${deps.headroomBytes} headroom), ${free} free in ${deps.workRoot}`,
      { required: needed, free },
    );
}

/**
 * Every file of the listing into the work directory, one after another (resuming what an earlier run left),
 * the downloader's progress reported as the whole pull's. Returns the files' provenance and the bytes fetched.
 */
async function fetchAll(
  files: HubFile[],
  at: FileFetch,
  report: (p: PullProgress) => void,
): Promise<{ provFiles: HubProvenanceFile[]; fetched: number }> {
  const total = files.reduce((a, f) => a + f.size, 0);
  const provFiles: HubProvenanceFile[] = [];
  let before = 0;
  let fetched = 0;
  let index = 0;
  let current: HubFile | undefined;
  const onProgress = (p: { done: number; total: number }) =>
    report({
      phase: 'downloading',
      file: current?.path,
      fileIndex: index,
      fileCount: files.length,
      done: before + p.done,
      total,
    });
  at.downloader.on('progress', onProgress);
  try {
    for (const file of files) {
      current = file;
      index++;
      const got = await fetchHubFile(file, at);
      provFiles.push(got.entry);
      fetched += got.fetched;
      before += file.size;
      report({
        phase: 'downloading',
        file: file.path,
        fileIndex: index,
        fileCount: files.length,
        done: before,
        total,
      });
    }
  } catch (err) {
    // Bytes that contradict the hub's own hashes: start clean next time. A cut keeps what arrived, for resume.
    if (err instanceof MnnEdgeError && err.code === 'EVERIFY')
      rmSync(at.work, { recursive: true, force: true });
    throw err;
  } finally {
    at.downloader.off('progress', onProgress);
  }

  return { provFiles, fetched };
}

export async function pullFromHub(
  ref: HubRepoRef,
  deps: HubPullDeps,
  options: HubPullOptions = {},
): Promise<HubPullResult> {
  const { client, store, signal } = { ...deps, signal: options.signal };
  const report = options.onProgress ?? (() => {});
  report({ phase: 'listing', fileIndex: 0, fileCount: 0, done: 0, total: 0 });
  const snapshot = await client.snapshot(ref, signal);
  const { files, skipped } = checkListing(snapshot);
  requireMnnExport(snapshot, files);
  const repo = repoName(ref);
  const total = files.reduce((a, f) => a + f.size, 0);

  const same = installedFromHub(store, client.hub, repo, snapshot.commit)[0];
  if (same) {
    // A pull cut between the store's commit and its own cleanup left this commit's download directory behind;
    // the package is installed, so nothing there is worth resuming.
    rmSync(workDirFor(deps.workRoot, snapshot), { recursive: true, force: true });
    report({ phase: 'done', fileIndex: files.length, fileCount: files.length, done: total, total });
    return {
      status: 'unchanged',
      ref: { id: same.id, version: same.version },
      repo,
      commit: snapshot.commit,
      totalBytes: total,
      fetchedBytes: 0,
      skipped,
      provenance: same.manifest.provenance!,
    };
  }
  const id = options.id ?? idFor(ref);
  const other = store.list().find((p) => p.id === id && p.manifest.provenance?.repo !== repo);
  if (other)
    throw new HubPullError(
      'EEXIST',
      `Model id ${id} is already used by ${other.manifest.provenance ? `${other.manifest.provenance.repo} from ${other.manifest.provenance.hub}` : 'a package installed otherwise'}; pass --id to name this one`,
    );
  const version = options.version ?? nextVersion(store, id);

  mkdirSync(deps.workRoot, { recursive: true });
  const work = workDirFor(deps.workRoot, snapshot);
  mkdirSync(work, { recursive: true });
  requireSpace(files, work, repo, deps);
  const { provFiles, fetched } = await fetchAll(
    files,
    { client, snapshot, downloader: deps.downloader, work, signal },
    report,
  );

  report({ phase: 'installing', fileIndex: files.length, fileCount: files.length, done: total, total });
  const { manifest, provenance } = hubManifest(work, files, provFiles, {
    client,
    ref,
    snapshot,
    repo,
    id,
    version,
    pulledAt: deps.now?.() ?? new Date(),
  });
  writeFileDurable(join(work, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  // The download directory is ours: its files move into the store instead of being copied a second time.
  const pkg = await store.import(work, {
    consumeSource: { sha256: new Map(provFiles.map((f) => [f.path, f.sha256])) },
    ...(signal ? { signal } : {}),
  });
  rmSync(work, { recursive: true, force: true });
  report({ phase: 'done', fileIndex: files.length, fileCount: files.length, done: total, total });
  return {
    status: 'installed',
    ref: { id: pkg.id, version: pkg.version },
    repo,
    commit: snapshot.commit,
    totalBytes: total,
    fetchedBytes: fetched,
    skipped,
    provenance,
  };
}

function readBuffer(path: string): Buffer | undefined {
  try {
    return statSync(path).size <= 4 * 1024 * 1024 ? readFileSync(path) : undefined;
  } catch {
    return undefined;
  }
}

function mismatch(path: string, expected: string, actual: string): HubPullError {
  return new HubPullError(
    'EVERIFY',
    `${path} has sha256 ${actual}, but the hub lists ${expected}; nothing installed`,
    { entry: path, expected, actual },
  );
}
