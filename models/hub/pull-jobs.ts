import { join } from 'node:path';
import { Downloader, type DownloadPolicy } from '../../lib/download/downloader.js';
import { errorMessage, MnnEdgeError } from '../../lib/errors.js';
import type { HubName } from '../manifest/types.js';
import type { ModelStore } from '../store/model-store.js';
import { formatRef } from '../store/model-store.js';
import { type HubPullResult, type PullPhase, pullFromHub } from './pull.js';
import { RateMeter } from './rate-meter.js';
import { formatHubSource, parseHubSource } from './source.js';
import type { HubClient } from './types.js';
import { repoName } from './types.js';

// Hub pulls running inside the agent, for the dashboard and the fleet: each one in the background with its
// progress (bytes, rate, ETA) kept as a plain view that is pushed to whoever watches, a cancel that stops the
// transfer and returns once the files are closed (what arrived stays in the download directory, so the next
// pull of the same commit resumes; the store never sees a partial package), and one pull per repository at a
// time: two pulls of one repository would write the same download directory.

export type PullState = 'running' | 'cancelling' | 'installed' | 'unchanged' | 'failed' | 'cancelled';

export interface PullError {
  /** The agent's error code (EHUBNOTFOUND, EHUBAUTH, EHUBNOTMNN, ENOSPC, EVERIFY, …). */
  code: string;
  message: string;
  /** What to do about it, when there is something to do. */
  hint?: string;
}

export interface PullJobView {
  id: string;
  /** hf://owner/name[@rev] or ms://… as asked. */
  source: string;
  hub: HubName;
  repo: string;
  /** Who asked: "dashboard (…)" or "fleet". */
  requestedBy: string;
  state: PullState;
  phase: PullPhase;
  file?: string;
  fileIndex: number;
  fileCount: number;
  doneBytes: number;
  totalBytes: number;
  bytesPerSecond?: number;
  etaSeconds?: number;
  startedAt: string;
  finishedAt?: string;
  /** id@version once installed (or found already installed). */
  model?: string;
  commit?: string;
  /** Bytes this pull took over the network (the rest was resumed or already there). */
  fetchedBytes?: number;
  error?: PullError;
  /** Hub packages carry no signature: the first copy seen is trusted. */
  trust: 'unsigned-tofu';
}

export interface HubPullJobsDeps {
  store: () => ModelStore | undefined;
  client: (hub: HubName) => HubClient;
  download: DownloadPolicy;
  /** Where downloads wait until complete (kept across cancels and restarts, for resume). */
  workRoot: string;
  now?: () => number;
  monotonicMs?: () => number;
  /** Finished pulls kept in the list; default 10. */
  keepFinished?: number;
  /** Least time between two pushed progress views of one pull; default 250 ms. */
  pushIntervalMs?: number;
}

export interface StartedPull {
  view: PullJobView;
  /** The pull's outcome; rejects with its error (a cancel included). */
  done: Promise<HubPullResult>;
}

interface Job {
  view: PullJobView;
  key: string;
  controller: AbortController;
  settled: Promise<void>;
}

const CANCELLED = 'Cancelled; pulling the same model again resumes where this stopped';

/** What to do about a failed pull, by its error code. */
export function pullErrorHint(code: string, details?: Record<string, unknown>): string | undefined {
  switch (code) {
    case 'EHUBAUTH': {
      const variable = typeof details?.['variable'] === 'string' ? details['variable'] : 'the hub token';
      return `Set ${variable} in the agent's environment (systemctl edit mnn-edge: Environment=${variable}=…), restart the agent, and accept the model's terms on the hub if it is gated`;
    }
    case 'EHUBNOTFOUND':
      return 'Check the owner, name and revision on the hub page (names are case-sensitive)';
    case 'EHUBNOTMNN':
      return 'Pull a repository that holds an MNN export (config.json and .mnn graphs), e.g. one by taobao-mnn on Hugging Face or MNN on ModelScope';
    case 'ENOSPC':
      return 'Free space on the data partition (mnn-edge models gc removes unused versions) or pick a smaller model';
    case 'EHUBUNREACHABLE':
      return 'The hub is not reachable from this device; behind a mirror or offline, set models.sources.hf.endpoint / models.sources.ms.endpoint (or HF_ENDPOINT)';
    case 'EVERIFY':
      return 'The bytes that did not match were deleted; pull again, and report the repository if it keeps failing';
    default:
      return undefined;
  }
}

function errorOf(err: unknown): PullError {
  const code = err instanceof MnnEdgeError ? err.code : ((err as { code?: unknown }).code ?? 'EPULL');
  const details =
    err instanceof MnnEdgeError ? (err.details as Record<string, unknown> | undefined) : undefined;
  const hint = pullErrorHint(String(code), details);
  return { code: String(code), message: errorMessage(err), ...(hint !== undefined ? { hint } : {}) };
}

export class HubPullJobs {
  readonly #deps: HubPullJobsDeps;
  readonly #jobs = new Map<string, Job>();
  readonly #listeners = new Set<(view: PullJobView) => void>();
  #next = 1;

  constructor(deps: HubPullJobsDeps) {
    this.#deps = deps;
  }

  /** Running pulls first, then finished ones, newest first. */
  list(): PullJobView[] {
    return [...this.#jobs.values()]
      .map((j) => ({ ...j.view }))
      .sort(
        (a, b) =>
          Number(b.state === 'running' || b.state === 'cancelling') -
            Number(a.state === 'running' || a.state === 'cancelling') ||
          Number(b.id.slice(1)) - Number(a.id.slice(1)),
      );
  }

  get(id: string): PullJobView | undefined {
    const job = this.#jobs.get(id);
    return job ? { ...job.view } : undefined;
  }

  /** Every change of every pull (progress at most every pushIntervalMs); returns the unsubscribe function. */
  subscribe(listener: (view: PullJobView) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Starts a pull in the background. Throws EUSAGE for a source that is not a hub repository, EUNAVAILABLE
   * without a model store, EBUSY while the same repository is being pulled.
   */
  start(source: string, options: { id?: string; version?: string; requestedBy: string }): StartedPull {
    const ref = parseHubSource(source);
    const store = this.#deps.store();
    if (!store) throw new MnnEdgeError('EUNAVAILABLE', 'The model store is not open on this agent');
    const repo = repoName(ref);
    const key = `${ref.hub}:${repo.toLowerCase()}`;
    const busy = [...this.#jobs.values()].find(
      (j) => j.key === key && (j.view.state === 'running' || j.view.state === 'cancelling'),
    );
    if (busy) {
      const pct =
        busy.view.totalBytes > 0 ? Math.floor((busy.view.doneBytes / busy.view.totalBytes) * 100) : 0;
      throw new MnnEdgeError(
        'EBUSY',
        `${busy.view.source} is already being pulled (pull ${busy.view.id}, ${pct} %, asked by ${busy.view.requestedBy}); wait for it or cancel it first`,
        { pull: busy.view.id },
      );
    }
    const now = this.#deps.now ?? Date.now;
    const mono = this.#deps.monotonicMs ?? (() => performance.now());
    const id = `p${this.#next++}`;
    const view: PullJobView = {
      id,
      source: formatHubSource(ref),
      hub: ref.hub,
      repo,
      requestedBy: options.requestedBy,
      state: 'running',
      phase: 'listing',
      fileIndex: 0,
      fileCount: 0,
      doneBytes: 0,
      totalBytes: 0,
      startedAt: new Date(now()).toISOString(),
      trust: 'unsigned-tofu',
    };
    const controller = new AbortController();
    const meter = new RateMeter();
    const pushEvery = this.#deps.pushIntervalMs ?? 250;
    let lastPush = -Infinity;
    let lastPhase: PullPhase = view.phase;
    const client = this.#deps.client(ref.hub);
    const done = pullFromHub(
      ref,
      {
        client,
        store,
        downloader: new Downloader(this.#deps.download),
        workRoot: this.#deps.workRoot,
        headroomBytes: this.#deps.download.headroomBytes,
      },
      {
        signal: controller.signal,
        ...(options.id !== undefined ? { id: options.id } : {}),
        ...(options.version !== undefined ? { version: options.version } : {}),
        onProgress: (p) => {
          const t = mono();
          const rate = p.phase === 'downloading' ? meter.add(t, p.done) : undefined;
          view.phase = p.phase;
          view.fileIndex = p.fileIndex;
          view.fileCount = p.fileCount;
          view.doneBytes = p.done;
          view.totalBytes = p.total;
          if (p.file !== undefined) view.file = p.file;
          if (rate !== undefined) {
            view.bytesPerSecond = Math.round(rate);
            view.etaSeconds = rate > 0 ? Math.ceil((p.total - p.done) / rate) : undefined;
          }
          // Every phase change goes out; within a phase, a few views a second are enough for a bar.
          if (p.phase === lastPhase && t - lastPush < pushEvery) return;
          lastPhase = p.phase;
          lastPush = t;
          this.#push(view);
        },
      },
    );
    const job: Job = {
      view,
      key,
      controller,
      settled: done.then(
        (result) => {
          view.state = result.status;
          view.model = formatRef(result.ref);
          view.commit = result.commit;
          view.fetchedBytes = result.fetchedBytes;
          view.doneBytes = result.totalBytes;
          view.totalBytes = result.totalBytes;
          this.#finish(view, now);
        },
        (err: unknown) => {
          if (controller.signal.aborted) {
            view.state = 'cancelled';
            view.error = { code: 'EABORTED', message: CANCELLED };
          } else {
            view.state = 'failed';
            view.error = errorOf(err);
          }
          this.#finish(view, now);
        },
      ),
    };
    // Whoever only watches the list (the dashboard) never awaits `done`: its rejection is handled here.
    done.catch(() => {});
    this.#jobs.set(id, job);
    this.#prune();
    this.#push(view);
    return { view: { ...view }, done };
  }

  /** Stops a running pull and resolves once it has stopped; a finished pull is returned as it is. */
  async cancel(id: string): Promise<PullJobView> {
    const job = this.#jobs.get(id);
    if (!job) throw new MnnEdgeError('ENOENT', `No pull ${JSON.stringify(id.slice(0, 40))}`);
    if (job.view.state === 'running') {
      job.view.state = 'cancelling';
      this.#push(job.view);
      job.controller.abort(new MnnEdgeError('EABORTED', CANCELLED));
    }
    await job.settled;
    return { ...job.view };
  }

  /** Cancels every running pull (the agent is stopping); resolves once all have stopped. */
  async close(): Promise<void> {
    await Promise.all(
      [...this.#jobs.values()]
        .filter((j) => j.view.state === 'running' || j.view.state === 'cancelling')
        .map((j) => this.cancel(j.view.id)),
    );
    this.#listeners.clear();
  }

  #finish(view: PullJobView, now: () => number): void {
    view.finishedAt = new Date(now()).toISOString();
    delete view.bytesPerSecond;
    delete view.etaSeconds;
    this.#push(view);
    this.#prune();
  }

  #prune(): void {
    const keep = this.#deps.keepFinished ?? 10;
    const finished = [...this.#jobs.values()].filter(
      (j) => j.view.state !== 'running' && j.view.state !== 'cancelling',
    );
    for (const j of finished.slice(0, Math.max(0, finished.length - keep))) this.#jobs.delete(j.view.id);
  }

  #push(view: PullJobView): void {
    const copy = { ...view };
    for (const l of this.#listeners) l(copy);
  }
}

/** The download directory every hub pull of this agent uses (the CLI's too, so either resumes the other's). */
export function hubDownloadsDir(dataDir: string): string {
  return join(dataDir, 'hub-downloads');
}
