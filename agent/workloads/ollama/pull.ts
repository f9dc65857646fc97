// POST /api/pull through the board's model hubs. Ollama's library does not exist here: a model is pulled from
// Hugging Face or ModelScope by its repository (hf://owner/name, ms://owner/name, or Ollama's own spelling for
// Hugging Face, hf.co/owner/name), installed into the model store, and progress streams as Ollama's NDJSON
// status lines (`status`, `digest`, `total`, `completed`) ending with `success` or `{"error": …}`.
import { errorMessage } from '../../../lib/errors.js';
import type { RequestContext } from '../../http/router.js';
import { badRequest, OllamaError, sendOllamaError, toOllamaError } from './errors.js';
import { findByName } from './names.js';
import type { OllamaRoutesDeps, PullPort, PullView } from './types.js';

/** hf://…, ms://…, or hf.co/… / huggingface.co/… / modelscope.cn/… (an Ollama-style `:tag` becomes `@rev`). */
export function hubSourceOf(name: string): string | undefined {
  if (/^(hf|ms):\/\//.test(name)) return name;
  const m =
    /^(?:https?:\/\/)?(hf\.co|huggingface\.co|modelscope\.cn|www\.modelscope\.cn)\/([^/\s:]+\/[^/\s:]+)(?::([^/\s]+))?$/.exec(
      name,
    );
  if (!m) return undefined;
  const hub = m[1]!.includes('modelscope') ? 'ms' : 'hf';
  const rev = m[3] && m[3] !== 'latest' ? `@${m[3]}` : '';
  return `${hub}://${m[2]}${rev}`;
}

function progressLine(view: PullView): Record<string, unknown> {
  switch (view.phase) {
    case 'listing':
      return { status: 'pulling manifest' };
    case 'downloading':
      return {
        status: `pulling ${view.file ?? view.source}`,
        digest: view.file ?? view.source,
        total: view.totalBytes,
        completed: view.doneBytes,
      };
    case 'installing':
      return { status: 'verifying and installing' };
    default:
      return { status: view.phase };
  }
}

function failure(view: PullView | undefined, err: unknown): string {
  const e = view?.error;
  if (e) return e.hint ? `${e.message} (${e.hint})` : e.message;
  return errorMessage(err);
}

export function pullHandler(deps: OllamaRoutesDeps) {
  return async (ctx: RequestContext): Promise<void> => {
    let name: string;
    let stream: boolean;
    try {
      const body = (await ctx.readJson()) as Record<string, unknown> | null;
      const raw = body?.['model'] ?? body?.['name'];
      if (typeof raw !== 'string' || raw.trim().length === 0) throw badRequest('model is required');
      name = raw.trim();
      stream = body?.['stream'] !== false;
    } catch (err) {
      return sendOllamaError(ctx.res, toOllamaError(err));
    }
    const served = findByName(name, deps.models()) !== undefined;
    const source = hubSourceOf(name);
    if (!served && !source)
      return sendOllamaError(
        ctx.res,
        badRequest(
          `model "${name}" cannot be pulled here: this device pulls MNN exports from its model hubs — ` +
            'name one as hf://owner/name, hf.co/owner/name or ms://owner/name',
        ),
      );
    const pulls = deps.pulls();
    if (!served && !pulls)
      return sendOllamaError(ctx.res, new OllamaError(503, 'The model store is not open on this agent'));
    const lines: Array<Record<string, unknown>> = [];
    const send = (line: Record<string, unknown>) => {
      if (stream) ctx.res.write(`${JSON.stringify(line)}\n`);
      else lines.push(line);
    };
    let started: ReturnType<PullPort['start']> | undefined;
    let last: PullView | undefined;
    let unsubscribe = () => {};
    try {
      if (!served) {
        started = pulls!.start(source!, { requestedBy: 'Ollama API' });
        const id = started.view.id;
        last = started.view;
        unsubscribe = pulls!.subscribe((v) => {
          if (v.id !== id) return;
          last = v;
          if (v.state === 'running') send(progressLine(v));
        });
      }
      if (stream)
        ctx.res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'Cache-Control': 'no-store' });
      send({ status: 'pulling manifest' });
      if (started) await started.done;
      if (last?.model) send({ status: `installed ${last.model}` });
      send({ status: 'success' });
      if (stream) ctx.res.end();
      else ctx.json(200, lines.at(-1));
    } catch (err) {
      const message = failure(last, err);
      if (stream && ctx.res.headersSent) {
        send({ error: message });
        ctx.res.end();
      } else sendOllamaError(ctx.res, started ? new OllamaError(500, message) : toOllamaError(err));
    } finally {
      unsubscribe();
    }
  };
}
