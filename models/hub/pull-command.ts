import type { DownloadPolicy } from '../../lib/download/downloader.js';
import { MnnEdgeError } from '../../lib/errors.js';
import type { JsonSchema } from '../../lib/schema.js';
import type { ModelsConfig } from '../config.js';
import type { ModelStore } from '../store/model-store.js';
import { formatRef } from '../store/model-store.js';
import { hubClient, hubSettings } from './clients.js';
import type { HubPullResult, PullProgress } from './pull.js';
import { HubPullJobs, hubDownloadsDir } from './pull-jobs.js';
import { formatHubSource, parseHubSource } from './source.js';

// The fleet's `pull-model` command: one hub pull on this device, with `models.pull.progress` events on the
// way and the final status as the answer (and a `models.pull.done` / `models.pull.failed` event). Signed OTA
// packages stay the fleet's way to roll out; a hub pull is reported as unsigned, trusted on first use.

export interface PullCommandSink {
  register<P>(definition: {
    name: string;
    summary: string;
    params?: JsonSchema;
    timeoutMs?: number;
    handler(params: P, ctx: { signal: AbortSignal }): unknown;
  }): void;
}

export interface PullCommandDeps {
  store: () => ModelStore | undefined;
  models: ModelsConfig;
  download: DownloadPolicy;
  dataDir: string;
  env: NodeJS.ProcessEnv;
  publishEvent: (type: string, data: Record<string, unknown>) => void;
  now?: () => number;
  /** The agent's pulls (shared with the dashboard); by default the command keeps its own. */
  jobs?: HubPullJobs;
}

export interface PullModelParams {
  source: string;
  id?: string;
  version?: string;
}

/** A pull request's fields, for the fleet command and the dashboard's POST alike. */
export const PULL_MODEL_PARAMS: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['source'],
  properties: {
    source: { type: 'string', minLength: 6, maxLength: 512 },
    id: { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]{0,63}$' },
    version: { type: 'string', maxLength: 64 },
  },
};

/** Progress often enough to draw a bar, rarely enough not to flood the broker: every 5 % or 2 s. */
function throttle(now: () => number, publish: (p: PullProgress) => void): (p: PullProgress) => void {
  let lastAt = -Infinity;
  let lastFrac = -1;
  let lastPhase = '';
  return (p) => {
    const frac = p.total > 0 ? p.done / p.total : 0;
    const t = now();
    if (p.phase === lastPhase && frac - lastFrac < 0.05 && t - lastAt < 2000 && p.done < p.total) return;
    lastAt = t;
    lastFrac = frac;
    lastPhase = p.phase;
    publish(p);
  };
}

/**
 * The pull's progress as `models.pull.progress` events (throttled), from the moment it is called, with the bytes
 * per second since then; returns the unsubscribe.
 */
function publishProgress(
  jobs: HubPullJobs,
  jobId: string,
  source: string,
  publishEvent: PullCommandDeps['publishEvent'],
  now: () => number,
): () => void {
  const started = now();
  const publish = throttle(now, (q) => {
    const seconds = (now() - started) / 1000;
    publishEvent('models.pull.progress', {
      source,
      phase: q.phase,
      ...(q.file !== undefined ? { file: q.file } : {}),
      fileIndex: q.fileIndex,
      fileCount: q.fileCount,
      done: q.done,
      total: q.total,
      percent: q.total > 0 ? Math.floor((q.done / q.total) * 100) : 0,
      ...(seconds > 0 ? { bytesPerSecond: Math.round(q.done / seconds) } : {}),
    });
  });
  return jobs.subscribe((v) => {
    if (v.id !== jobId || (v.state !== 'running' && v.state !== 'cancelling')) return;
    publish({
      phase: v.phase,
      ...(v.file !== undefined ? { file: v.file } : {}),
      fileIndex: v.fileIndex,
      fileCount: v.fileCount,
      done: v.doneBytes,
      total: v.totalBytes,
    });
  });
}

export function registerPullModelCommand(sink: PullCommandSink, deps: PullCommandDeps): void {
  let running: string | undefined;
  // The agent's pulls, shared with the dashboard, so a repository is never pulled twice at once.
  const jobs =
    deps.jobs ??
    new HubPullJobs({
      store: deps.store,
      client: (hub) => hubClient(hub, hubSettings(hub, deps.models, deps.env)),
      download: deps.download,
      workRoot: hubDownloadsDir(deps.dataDir),
    });
  sink.register<PullModelParams>({
    name: 'pull-model',
    summary:
      'pull an MNN export from Hugging Face (hf://) or ModelScope (ms://) onto this device (unsigned, TOFU)',
    params: PULL_MODEL_PARAMS,
    timeoutMs: 6 * 3600_000,
    async handler(p, ctx) {
      if (!deps.store()) throw new MnnEdgeError('EUNAVAILABLE', 'The model store is not open');
      const ref = parseHubSource(p.source);
      const source = formatHubSource(ref);
      if (running !== undefined)
        throw new MnnEdgeError('EBUSY', `A pull is already running (${running}); one at a time`);
      running = source;
      const now = deps.now ?? Date.now;
      try {
        const pull = jobs.start(source, {
          ...(p.id !== undefined ? { id: p.id } : {}),
          ...(p.version !== undefined ? { version: p.version } : {}),
          requestedBy: 'fleet',
        });
        const unsubscribe = publishProgress(jobs, pull.view.id, source, deps.publishEvent, now);
        const cancel = () => void jobs.cancel(pull.view.id);
        ctx.signal.addEventListener('abort', cancel, { once: true });
        let result: HubPullResult;
        try {
          result = await pull.done;
        } finally {
          unsubscribe();
          ctx.signal.removeEventListener('abort', cancel);
        }
        const summary = {
          source,
          status: result.status,
          model: formatRef(result.ref),
          repo: result.repo,
          commit: result.commit,
          totalBytes: result.totalBytes,
          fetchedBytes: result.fetchedBytes,
          trust: 'unsigned-tofu',
        };
        deps.publishEvent('models.pull.done', summary);
        return summary;
      } catch (err) {
        deps.publishEvent('models.pull.failed', {
          source,
          code: (err as { code?: unknown }).code ?? 'EHANDLER',
          message: (err as Error).message,
        });
        throw err;
      } finally {
        running = undefined;
      }
    },
  });
}
