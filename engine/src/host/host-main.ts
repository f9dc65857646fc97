// Entry point of an engine host: a child process that owns at most one loaded model and serves the protocol
// in ./protocol.ts over the IPC channel. A native crash here kills only this process; the agent's client
// reports it. Started by EngineHostClient, never by hand.
import { errorMessage } from '../../../agent/common/errors.js';
import { EngineError } from '../errors.js';
import { Llm } from '../llm.js';
import { createAddonLoader } from '../loader.js';
import { type HostRequest, type HostResponse, isHostRequest, type WireError } from './protocol.js';

function wire(err: unknown): WireError {
  const code = (err as { code?: unknown })?.code;
  return { code: typeof code === 'string' ? code : 'EENGINE', message: errorMessage(err) };
}

export function serveEngineHost(channel: NodeJS.Process): void {
  const addonLoader = createAddonLoader();
  let llm: Llm | undefined;
  const running = new Map<number, AbortController>();

  const send = (msg: HostResponse) => {
    if (channel.connected) channel.send?.(msg);
  };
  const requireModel = (what: string): Llm => {
    if (!llm) throw new EngineError('ESTATE', `engine host: ${what} needs a loaded model (send load first)`);
    return llm;
  };

  const handlers = {
    async load(m: Extract<HostRequest, { type: 'load' }>) {
      if (llm)
        throw new EngineError('ESTATE', `engine host already holds ${llm.configPath}; unload it first`);
      llm = await Llm.load(m.configPath, { overrides: m.overrides, addon: addonLoader.load() });
      return { configPath: llm.configPath, capabilities: llm.capabilities, config: { ...llm.config } };
    },
    async generate(m: Extract<HostRequest, { type: 'generate' }>) {
      const model = requireModel('generate');
      const abort = new AbortController();
      running.set(m.id, abort);
      try {
        const generation = model.generate(m.input, { ...m.options, signal: abort.signal });
        for await (const text of generation) send({ type: 'piece', id: m.id, text });
        send({ type: 'done', id: m.id, result: await generation.result });
      } finally {
        running.delete(m.id);
      }
      return undefined;
    },
    async stats() {
      return requireModel('stats').lastStats ?? null;
    },
    async reset() {
      await requireModel('reset').reset();
      return undefined;
    },
    async unload() {
      const model = llm;
      llm = undefined;
      await model?.dispose();
      return undefined;
    },
  };

  const shutdown = async () => {
    for (const a of running.values()) a.abort();
    await llm?.dispose().catch(() => {});
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
    const run = (): Promise<unknown> => {
      switch (m.type) {
        case 'load':
          return handlers.load(m);
        case 'generate':
          return handlers.generate(m);
        case 'stats':
          return handlers.stats();
        case 'reset':
          return handlers.reset();
        case 'unload':
          return handlers.unload();
      }
    };
    run().then(
      (value) => {
        if (m.type !== 'generate') send({ type: 'result', id: m.id, value: value as never });
      },
      (err: unknown) => send({ type: 'error', id: m.id, error: wire(err) }),
    );
  });
  // The agent went away: nobody can use this model any more.
  channel.on('disconnect', () => void shutdown());
  send({ type: 'ready', pid: process.pid });
}

if (process.send) serveEngineHost(process);
