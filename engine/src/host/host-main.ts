// Entry point of an engine host: a child process that owns at most one loaded model (an Llm or an MnnGraph, MNN's Express::Module) and
// serves the protocol in ./protocol.ts over the IPC channel. A native crash here kills only this process; the
// agent's client reports it. Started by EngineHostClient, never by hand.
import { errorMessage } from '../../../lib/errors.js';
import { EngineError } from '../errors.js';
import { MnnGraph } from '../graph.js';
import { Llm, monotonicUs } from '../llm.js';
import { createAddonLoader } from '../loader.js';
import { WakePipeline } from '../wake.js';
import { type HostRequest, type HostResponse, isHostRequest, type WireError } from './protocol.js';

function wire(err: unknown): WireError {
  const code = (err as { code?: unknown })?.code;
  return { code: typeof code === 'string' ? code : 'EENGINE', message: errorMessage(err) };
}

/**
 * The host forwards tokens as fast as they come (the client buffers them), so read-ahead only lets the decode
 * thread carry on while the host is busy sending; more would be tokens decoded after nobody listens.
 */
const HOST_READ_AHEAD = 8;
// Tokens held up to this long on the decode thread and handed over together: one wake of this process's JS
// thread (and one message to the agent) per batch instead of per token (bench/engine measures both).
const HOST_HANDOVER_HOLD_MS = 10;

type Held =
  | { kind: 'llm'; model: Llm }
  | { kind: 'graph'; model: MnnGraph }
  | { kind: 'wake'; model: WakePipeline; path: string };

type Request<T extends HostRequest['type']> = Extract<HostRequest, { type: T }>;

/** The one model a host holds, the streams running on it, and a handler per request type. */
function createHostModel(send: (msg: HostResponse) => void) {
  const addonLoader = createAddonLoader();
  let held: Held | undefined;
  const running = new Map<number, AbortController>();

  const refuseSecond = () => {
    if (held)
      throw new EngineError(
        'ESTATE',
        `engine host already holds ${held.kind === 'llm' ? held.model.configPath : held.kind === 'wake' ? held.path : held.model.path}; unload it first`,
      );
  };
  const requireLlm = (what: string): Llm => {
    if (held?.kind === 'llm') return held.model;
    if (held) throw new EngineError('ESTATE', `engine host: ${what} needs an LLM, this host holds a graph`);
    throw new EngineError('ESTATE', `engine host: ${what} needs a loaded model (send load first)`);
  };
  const requireGraph = (what: string): MnnGraph | WakePipeline => {
    if (held?.kind === 'graph' || held?.kind === 'wake') return held.model;
    if (held) throw new EngineError('ESTATE', `engine host: ${what} needs a graph, this host holds an LLM`);
    throw new EngineError('ESTATE', `engine host: ${what} needs a loaded graph (send load-graph first)`);
  };
  const release = async () => {
    const h = held;
    held = undefined;
    if (h === undefined) return;
    await h.model.dispose();
    // The host waits for its next model: what this one freed goes back to the system now, not at the next load
    // (bench/idle weighs an idle host after an unload).
    addonLoader.load().trimHeap?.();
  };

  const handlers = {
    async load(m: Request<'load'>) {
      refuseSecond();
      const llm = await Llm.load(m.configPath, {
        overrides: m.overrides,
        addon: addonLoader.load(),
        ...(m.conversations ? { conversations: m.conversations } : {}),
      });
      held = { kind: 'llm', model: llm };
      return {
        configPath: llm.configPath,
        capabilities: llm.capabilities,
        config: { ...llm.config },
        timing: llm.loadTiming,
      };
    },
    async loadGraph(m: Request<'load-graph'>) {
      refuseSecond();
      const graph = await MnnGraph.load(m.path, { ...m.options, addon: addonLoader.load() });
      held = { kind: 'graph', model: graph };
      return { path: graph.path, info: graph.info };
    },
    async loadWake(m: Request<'load-wake'>) {
      refuseSecond();
      const pipeline = await WakePipeline.load(m.files, { ...m.options, addon: addonLoader.load() });
      held = { kind: 'wake', model: pipeline, path: m.files.embedding.path };
      return { keywords: pipeline.keywords };
    },
    async generate(m: Request<'generate'>) {
      const model = requireLlm('generate');
      const abort = new AbortController();
      running.set(m.id, abort);
      try {
        const generation = model.generate(m.input, {
          ...m.options,
          readAhead: m.options.readAhead ?? HOST_READ_AHEAD,
          handoverHoldMs: m.options.handoverHoldMs ?? HOST_HANDOVER_HOLD_MS,
          signal: abort.signal,
        });
        // One message per batch: tokens decoded while a message was being sent travel together.
        for await (const pieces of generation.batches())
          send({ type: 'pieces', id: m.id, pieces, sentUs: monotonicUs() });
        send({ type: 'done', id: m.id, result: await generation.result, delivery: generation.delivery });
      } finally {
        running.delete(m.id);
      }
      return undefined;
    },
    async speak(m: Request<'speak'>) {
      const model = requireLlm('speak');
      const abort = new AbortController();
      running.set(m.id, abort);
      try {
        for await (const chunk of model.speak({ ...m.options, signal: abort.signal }))
          send({ type: 'audio', id: m.id, ...chunk });
        send({ type: 'spoken', id: m.id });
      } finally {
        running.delete(m.id);
      }
      return undefined;
    },
    forward(m: Request<'forward'>) {
      return requireGraph('forward').forward(m.inputs);
    },
    async stats() {
      return requireLlm('stats').lastStats ?? null;
    },
    async reset() {
      await requireLlm('reset').reset();
      return undefined;
    },
    dropSnapshots() {
      return requireLlm('drop-snapshots').dropSnapshots();
    },
    // Availability, not an error: a missing addon is an answer the caller wants to show as is.
    runtimeInfo: () => addonLoader.availability(),
  };
  return { handlers, running, release };
}

export function serveEngineHost(channel: NodeJS.Process): void {
  const send = (msg: HostResponse) => {
    if (channel.connected) channel.send?.(msg);
  };
  const { handlers, running, release } = createHostModel(send);

  const shutdown = async () => {
    for (const a of running.values()) a.abort();
    await release().catch(() => {});
    process.exit(0);
  };

  channel.on('message', (raw: unknown) => {
    if (!isHostRequest(raw)) return;
    const m = raw;
    if (m.type === 'cancel') {
      running.get(m.target)?.abort();
      return;
    }
    if (m.type === 'exit') {
      void shutdown();
      return;
    }
    const run = async (): Promise<unknown> => {
      switch (m.type) {
        case 'load':
          return handlers.load(m);
        case 'load-graph':
          return handlers.loadGraph(m);
        case 'load-wake':
          return handlers.loadWake(m);
        case 'generate':
          return handlers.generate(m);
        case 'forward':
          return handlers.forward(m);
        case 'speak':
          return handlers.speak(m);
        case 'runtime-info':
          return handlers.runtimeInfo();
        case 'stats':
          return handlers.stats();
        case 'reset':
          return handlers.reset();
        case 'drop-snapshots':
          return handlers.dropSnapshots();
        case 'unload':
          return release();
      }
    };
    run().then(
      (value) => {
        // Streams end with their own message (done, spoken), not a result.
        if (m.type !== 'generate' && m.type !== 'speak')
          send({ type: 'result', id: m.id, value: value as never });
      },
      (err: unknown) => send({ type: 'error', id: m.id, error: wire(err) }),
    );
  });
  // The agent went away: nobody can use this model any more.
  channel.on('disconnect', () => void shutdown());
  send({ type: 'ready', pid: process.pid });
}

if (process.send) serveEngineHost(process);
