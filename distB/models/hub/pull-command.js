import { MnnEdgeError } from '../../agent/common/errors.js';
import { formatRef } from '../store/model-store.js';
import { hubClient, hubSettings } from './clients.js';
import { HubPullJobs, hubDownloadsDir } from './pull-jobs.js';
import { formatHubSource, parseHubSource } from './source.js';
/** A pull request's fields, for the fleet command and the dashboard's POST alike. */
export const PULL_MODEL_PARAMS = {
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
function throttle(now, publish) {
    let lastAt = -Infinity;
    let lastFrac = -1;
    let lastPhase = '';
    return (p) => {
        const frac = p.total > 0 ? p.done / p.total : 0;
        const t = now();
        if (p.phase === lastPhase && frac - lastFrac < 0.05 && t - lastAt < 2000 && p.done < p.total)
            return;
        lastAt = t;
        lastFrac = frac;
        lastPhase = p.phase;
        publish(p);
    };
}
export function registerPullModelCommand(sink, deps) {
    let running;
    // The agent's pulls, shared with the dashboard, so a repository is never pulled twice at once.
    const jobs = deps.jobs ??
        new HubPullJobs({
            store: deps.store,
            client: (hub) => hubClient(hub, hubSettings(hub, deps.models, deps.env)),
            download: deps.download,
            workRoot: hubDownloadsDir(deps.dataDir),
        });
    sink.register({
        name: 'pull-model',
        summary: 'pull an MNN export from Hugging Face (hf://) or ModelScope (ms://) onto this device (unsigned, TOFU)',
        params: PULL_MODEL_PARAMS,
        timeoutMs: 6 * 3600_000,
        async handler(p, ctx) {
            if (!deps.store())
                throw new MnnEdgeError('EUNAVAILABLE', 'The model store is not open');
            const ref = parseHubSource(p.source);
            const source = formatHubSource(ref);
            if (running !== undefined)
                throw new MnnEdgeError('EBUSY', `A pull is already running (${running}); one at a time`);
            running = source;
            const now = deps.now ?? Date.now;
            const started = now();
            try {
                const pull = jobs.start(source, {
                    ...(p.id !== undefined ? { id: p.id } : {}),
                    ...(p.version !== undefined ? { version: p.version } : {}),
                    requestedBy: 'fleet',
                });
                const publish = throttle(now, (q) => {
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
                });
                const unsubscribe = jobs.subscribe((v) => {
                    if (v.id !== pull.view.id || (v.state !== 'running' && v.state !== 'cancelling'))
                        return;
                    publish({
                        phase: v.phase,
                        ...(v.file !== undefined ? { file: v.file } : {}),
                        fileIndex: v.fileIndex,
                        fileCount: v.fileCount,
                        done: v.doneBytes,
                        total: v.totalBytes,
                    });
                });
                const cancel = () => void jobs.cancel(pull.view.id);
                ctx.signal.addEventListener('abort', cancel, { once: true });
                let result;
                try {
                    result = await pull.done;
                }
                finally {
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
            }
            catch (err) {
                deps.publishEvent('models.pull.failed', {
                    source,
                    code: err.code ?? 'EHANDLER',
                    message: err.message,
                });
                throw err;
            }
            finally {
                running = undefined;
            }
        },
    });
}
//# sourceMappingURL=pull-command.js.map