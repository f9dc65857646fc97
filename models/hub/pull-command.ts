import { join } from 'node:path';
import { MnnEdgeError } from '../../agent/common/errors.js';
import type { JsonSchema } from '../../agent/common/schema.js';
import { Downloader, type DownloadPolicy } from '../../ota/download.js';
import type { ModelsConfig } from '../config.js';
import type { ModelStore } from '../store/model-store.js';
import { formatRef } from '../store/model-store.js';
import { hubClient, hubSettings } from './clients.js';
import { type PullProgress, pullFromHub } from './pull.js';
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
}

export interface PullModelParams {
  source: string;
  id?: string;
  version?: string;
}

const params: JsonSchema = {
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

export function registerPullModelCommand(sink: PullCommandSink, deps: PullCommandDeps): void {
  let running: string | undefined;
  sink.register<PullModelParams>({
    name: 'pull-model',
    summary:
      'pull an MNN export from Hugging Face (hf://) or ModelScope (ms://) onto this device (unsigned, TOFU)',
    params,
    timeoutMs: 6 * 3600_000,
    async handler(p, ctx) {
      const store = deps.store();
      if (!store) throw new MnnEdgeError('EUNAVAILABLE', 'The model store is not open');
      const ref = parseHubSource(p.source);
      const source = formatHubSource(ref);
      if (running !== undefined)
        throw new MnnEdgeError('EBUSY', `A pull is already running (${running}); one at a time`);
      running = source;
      const now = deps.now ?? Date.now;
      const started = now();
      try {
        const client = hubClient(ref.hub, hubSettings(ref.hub, deps.models, deps.env));
        const result = await pullFromHub(
          ref,
          {
            client,
            store,
            downloader: new Downloader(deps.download),
            workRoot: join(deps.dataDir, 'hub-downloads'),
            headroomBytes: deps.download.headroomBytes,
          },
          {
            signal: ctx.signal,
            ...(p.id !== undefined ? { id: p.id } : {}),
            ...(p.version !== undefined ? { version: p.version } : {}),
            onProgress: throttle(now, (q) => {
              const seconds = (now() - started) / 1000;
              deps.publishEvent('models.pull.progress', {
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
            }),
          },
        );
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
