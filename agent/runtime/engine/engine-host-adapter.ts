import { execFile } from 'node:child_process';
import { EngineError, EngineHostClient } from '../../../engine/index.js';
import { errorMessage } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import { compressCpus } from '../../plan/config-key.js';
import {
  EngineFailure,
  type EngineFailureKind,
  type EngineHost,
  type EngineHostFactory,
  type GenerateEvent,
  type GenerateRequest,
  type HostExit,
  type HostMemory,
  type InstanceSpec,
  type LoadReport,
  type SpeakRequest,
  type SpeechOut,
  type TensorIn,
  type TensorOut,
} from './engine-port.js';
import { type GpuCacheKey, type GpuCacheStore, type PreparedGpuCache, usesGpuCache } from './gpu-cache.js';
import { graphFilePath, graphProfileOf, wakeFilesOf } from './graph-models.js';
import { processMemory } from './proc-memory.js';

// The runtime's EngineHost port over engine/'s EngineHostClient (one child process per loaded model).

export interface EngineHostAdapterOptions {
  /** MNN version the hosts run (engine runtimeInfo().mnnVersion), part of every measurement key. */
  engineVersion: string;
  log: Logger;
  /** Scratch directory for the hosts (MNN creates tmp_* directories in its working directory). */
  cwd?: string;
  /** procfs root for RSS readings. */
  procRoot?: string;
  /** Pins a process and all its threads to CPUs; default runs `taskset -a -p -c`. */
  pinCpus?: (pid: number, cpus: number[]) => Promise<void>;
  /** Per-model GPU kernel caches under the data directory; without it MNN writes into the host's cwd. */
  gpuCache?: GpuCacheStore;
}

function tasksetPin(pid: number, cpus: number[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('taskset', ['-a', '-p', '-c', compressCpus(cpus), String(pid)], (err) =>
      err ? reject(err) : resolve(),
    );
  });
}

function classify(err: unknown, phase: 'load' | 'generate'): EngineFailure {
  if (err instanceof EngineFailure) return err;
  const code = err instanceof EngineError ? err.code : undefined;
  let kind: EngineFailureKind;
  if (code === 'EHOSTEXIT') kind = 'crash';
  else if (phase === 'load') kind = 'load';
  else if (code === 'EABORT') kind = 'cancelled';
  // A native failure in the middle of a run (a driver error) says the placement is suspect.
  else if (code === 'EBACKEND' || code === 'EENGINE') kind = 'backend';
  else kind = 'request';
  return new EngineFailure(kind, errorMessage(err), { cause: err });
}

class AdaptedHost implements EngineHost {
  readonly pid: number;
  readonly exited: Promise<HostExit>;
  readonly #client: EngineHostClient;
  readonly #procRoot: string;
  readonly #options: EngineHostAdapterOptions;
  #cacheKey: GpuCacheKey | undefined;

  constructor(client: EngineHostClient, procRoot: string, options: EngineHostAdapterOptions) {
    this.#client = client;
    this.#procRoot = procRoot;
    this.#options = options;
    this.pid = client.pid ?? -1;
    this.exited = new Promise((resolve) => {
      if (client.exitInfo) resolve(client.exitInfo);
      client.events.once('exit', ({ code, signal }) => resolve({ code, signal }));
    });
  }

  async load(spec: InstanceSpec): Promise<LoadReport> {
    try {
      if (spec.kind === 'wake') {
        await this.#client.loadWake(wakeFilesOf(spec.configPath), {
          backend: spec.config.backend_type,
          threads: spec.config.thread_num,
          precision: spec.config.precision,
          memory: spec.config.memory,
        });
        return { cache: 'none' };
      }
      const profile = graphProfileOf(spec.kind);
      if (profile) {
        await this.#client.loadGraph(graphFilePath(spec.configPath), {
          inputs: profile.inputs,
          outputs: profile.outputs,
          backend: spec.config.backend_type,
          threads: spec.config.thread_num,
          precision: spec.config.precision,
          memory: spec.config.memory,
        });
        return { cache: 'none' };
      }
      const cache = this.#prepareCache(spec);
      const t0 = performance.now();
      const loaded = await this.#client.load(
        spec.configPath,
        {
          ...spec.configOverrides,
          backend_type: spec.config.backend_type,
          thread_num: spec.config.thread_num,
          precision: spec.config.precision,
          memory: spec.config.memory,
          ...(cache ? { tmp_path: cache.dir } : {}),
        },
        // Made at load (warm-up comes after), so that no conversation's first turn waits for its context.
        spec.conversations ? { ...spec.conversations, prepare: true } : undefined,
      );
      if (cache)
        this.#options.log.info('model loaded on a GPU backend', {
          key: spec.key,
          backend: spec.config.backend_type,
          cache: cache.state,
          loadMs: Math.round(performance.now() - t0),
          cacheDir: cache.dir,
        });
      // A cache that cannot be written (disabled) means every load compiles: cold.
      return { cache: cache ? (cache.state === 'warm' ? 'warm' : 'cold') : 'none', engine: loaded.timing };
    } catch (err) {
      throw classify(err, 'load');
    }
  }

  #prepareCache(spec: InstanceSpec): PreparedGpuCache | undefined {
    const store = this.#options.gpuCache;
    if (!store || !usesGpuCache(spec.config.backend_type)) return undefined;
    this.#cacheKey = {
      modelId: spec.modelId,
      version: spec.version,
      variantId: spec.variantId,
      backend: spec.config.backend_type,
      mnnVersion: this.#options.engineVersion,
    };
    return store.prepare(this.#cacheKey);
  }

  /** MNN writes the cache when the model's runtime is destroyed: seal it once that happened. */
  #sealCache(): void {
    if (this.#cacheKey) this.#options.gpuCache?.seal(this.#cacheKey);
  }

  async *generate(request: GenerateRequest, signal?: AbortSignal): AsyncIterable<GenerateEvent> {
    const generation = this.#client.generate(request.prompt, {
      ...(request.maxNewTokens !== undefined ? { maxNewTokens: request.maxNewTokens } : {}),
      ...(request.applyTemplate !== undefined ? { applyTemplate: request.applyTemplate } : {}),
      ...(request.mediaPlaced ? { mediaPlaced: true } : {}),
      ...(request.images ? { images: request.images } : {}),
      ...(request.audios ? { audios: request.audios } : {}),
      ...(signal ? { signal } : {}),
    });
    try {
      for await (const text of generation) yield { type: 'text', text };
      const result = await generation.result;
      if (result.finishReason === 'aborted' && signal?.aborted) {
        throw signal.reason instanceof EngineFailure
          ? signal.reason
          : new EngineFailure('cancelled', 'generation cancelled');
      }
      const s = result.stats;
      yield {
        type: 'done',
        finishReason: result.finishReason === 'stop' ? 'stop' : 'length',
        stats: {
          promptTokens: s.promptTokens,
          decodeTokens: s.generatedTokens,
          prefillMs: s.prefillUs / 1000,
          decodeMs: s.decodeUs / 1000,
          ...(s.reuse
            ? {
                reuse: {
                  outcome: s.reuse.outcome,
                  reason: s.reuse.reason,
                  reusedTokens: s.reuse.reusedTokens,
                  prefilledTokens: s.reuse.prefilledTokens,
                  ...(s.reuse.chunkTokens ? { chunkTokens: s.reuse.chunkTokens } : {}),
                  ...(s.reuse.contexts
                    ? {
                        context: s.reuse.contexts.context,
                        route: s.reuse.contexts.route,
                        contexts: s.reuse.contexts.count,
                        snapshotBytes: s.reuse.contexts.snapshotBytes,
                      }
                    : {}),
                },
              }
            : {}),
        },
      };
    } catch (err) {
      throw classify(err, 'generate');
    }
  }

  async *speak(request: SpeakRequest, signal?: AbortSignal): AsyncIterable<SpeechOut> {
    try {
      for await (const chunk of this.#client.speak({ text: request.text, ...(signal ? { signal } : {}) }))
        yield { samples: chunk.samples, sampleRate: chunk.sampleRate };
    } catch (err) {
      throw classify(err, 'generate');
    }
    if (signal?.aborted)
      throw signal.reason instanceof EngineFailure
        ? signal.reason
        : new EngineFailure('cancelled', 'speech cancelled');
  }

  async forward(inputs: TensorIn[], signal?: AbortSignal): Promise<TensorOut[]> {
    // A forward of a VAD frame takes well under a millisecond: it is not cancelled inside the host, only
    // refused before it starts.
    signal?.throwIfAborted();
    try {
      return await this.#client.forward(inputs);
    } catch (err) {
      throw classify(err, 'generate');
    }
  }

  memory(): Promise<HostMemory> {
    return processMemory(this.pid, this.#procRoot);
  }

  async dropSnapshots(): Promise<number> {
    try {
      return await this.#client.dropSnapshots();
    } catch (err) {
      throw classify(err, 'generate');
    }
  }

  async unload(): Promise<void> {
    await this.#client.unload();
    this.#sealCache();
  }

  async stop(): Promise<HostExit> {
    const exit = await this.#client.close();
    // A clean exit disposed the model (and wrote the cache); a killed host left whatever was there.
    if (exit.code === 0) this.#sealCache();
    return exit;
  }
}

export function engineHostFactory(options: EngineHostAdapterOptions): EngineHostFactory {
  const pin = options.pinCpus ?? tasksetPin;
  const log = options.log.child('hosts');
  return {
    engineVersion: options.engineVersion,
    async start({ label, cpus }) {
      const client = await EngineHostClient.start({
        name: label,
        logger: options.log,
        ...(options.cwd ? { cwd: options.cwd } : {}),
      });
      const host = new AdaptedHost(client, options.procRoot ?? '/', options);
      if (cpus.length > 0) {
        // Pinning is an optimisation: a board without taskset still runs, only less predictably.
        await pin(host.pid, cpus).catch((err: unknown) =>
          log.warn('could not pin engine host to CPUs', { pid: host.pid, cpus, error: errorMessage(err) }),
        );
      }
      return host;
    },
  };
}
