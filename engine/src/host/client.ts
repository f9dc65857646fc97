// EngineHostClient: the agent's side of one engine host process. The runtime holds one per loaded model.
// Everything MNN does happens in the child, so a native crash, abort or OOM there fails the requests in flight
// with an error naming the exit signal, and the agent carries on (restart() brings up a fresh process).

import type { ChildProcess } from 'node:child_process';
import { createLogger, type Logger } from '../../../lib/log.js';
import { TypedEventEmitter } from '../../../lib/typed-events.js';
import { EngineError } from '../errors.js';
import type { GraphOutput, Tensor } from '../graph.js';
import type {
  ConversationOptions,
  GenerateOptions,
  GenerationResult,
  GenerationStats,
  LlmConfigOverrides,
  SpeakOptions,
} from '../llm.js';
import type { EngineAvailability } from '../loader.js';
import type { ChatMessage } from '../prompt.js';
import type { WakeFiles } from '../wake.js';
import { describeExit, forkHost, type HostExit } from './host-process.js';
import { PendingRequests } from './pending.js';
import {
  type HostGraphOptions,
  type HostRequest,
  type HostResultValue,
  type HostWakeOptions,
  isHostResponse,
  type LoadedGraph,
  type LoadedModel,
  type LoadedWake,
} from './protocol.js';
import { defaultStartTimeoutMs } from './start-timeout.js';
import { HostGeneration, HostSpeech } from './streams.js';

export type { HostExit } from './host-process.js';
export { type HostDelivery, HostGeneration, HostSpeech } from './streams.js';

export interface EngineHostOptions {
  /** Shown in errors and logs, e.g. the slot or model name. */
  name?: string;
  logger?: Logger;
  env?: NodeJS.ProcessEnv;
  /** Working directory of the host; MNN may create tmp_* directories there. Default: the OS temp dir. */
  cwd?: string;
  startTimeoutMs?: number;
  /** How long close() waits for a clean exit before SIGKILL. */
  exitTimeoutMs?: number;
}

export interface EngineHostEvents {
  [key: string]: unknown;
  exit: HostExit & { expected: boolean };
  log: { stream: 'stdout' | 'stderr'; line: string };
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Outgoing = DistributiveOmit<HostRequest, 'id'>;

export class EngineHostClient {
  readonly name: string;
  readonly events = new TypedEventEmitter<EngineHostEvents>();
  readonly #options: EngineHostOptions;
  readonly #log: Logger;
  #child: ChildProcess | undefined;
  #exit: HostExit | undefined;
  #closing = false;
  readonly #pending = new PendingRequests();

  private constructor(options: EngineHostOptions) {
    this.#options = options;
    this.name = options.name ?? 'engine-host';
    this.#log = (options.logger ?? createLogger()).child(`engine-host:${this.name}`);
  }

  /** Starts a host process and waits until it is ready to take a model. */
  static async start(options: EngineHostOptions = {}): Promise<EngineHostClient> {
    const client = new EngineHostClient(options);
    await client.#spawn();
    return client;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get alive(): boolean {
    return this.#child !== undefined && this.#exit === undefined;
  }

  /** How the last process ended, when it has. */
  get exitInfo(): HostExit | undefined {
    return this.#exit;
  }

  /** Loads the model this host will serve (one per host). */
  async load(
    configPath: string,
    overrides: LlmConfigOverrides = {},
    conversations?: ConversationOptions,
  ): Promise<LoadedModel> {
    return (await this.#request(
      { type: 'load', configPath, overrides, ...(conversations ? { conversations } : {}) },
      'load',
    )) as LoadedModel;
  }

  /**
   * Drops the KV of every conversation but the one in the instance's own context (memory is short); resolves with
   * the bytes they were counted at.
   */
  async dropSnapshots(): Promise<number> {
    return (await this.#request({ type: 'drop-snapshots' }, 'drop-snapshots')) as number;
  }

  /** Loads a non-LLM model (Silero VAD, an encoder) into this host instead of an LLM. */
  async loadGraph(path: string, options: HostGraphOptions): Promise<LoadedGraph> {
    return (await this.#request({ type: 'load-graph', path, options }, 'load-graph')) as LoadedGraph;
  }

  /** Loads an openWakeWord pipeline into this host; `forward` then runs one step (see WakePipeline.forward). */
  async loadWake(files: WakeFiles, options: HostWakeOptions = {}): Promise<LoadedWake> {
    return (await this.#request({ type: 'load-wake', files, options }, 'load-wake')) as LoadedWake;
  }

  /** Runs the loaded Module once; typed arrays cross the channel intact (advanced serialization). */
  async forward(inputs: Tensor[]): Promise<GraphOutput[]> {
    return (await this.#request({ type: 'forward', inputs }, 'forward')) as GraphOutput[];
  }

  /** MNN's runtime info as the host process sees it, or why the engine cannot load there. Needs no model. */
  async runtimeInfo(): Promise<EngineAvailability> {
    return (await this.#request({ type: 'runtime-info' }, 'runtime-info')) as EngineAvailability;
  }

  /** Streams text pieces; options.signal cancels within one token in the host. */
  generate(input: string | ChatMessage[], options: GenerateOptions = {}): HostGeneration {
    const { signal, ...rest } = options;
    let id = 0;
    const cancel = () => {
      if (id && this.alive) this.#post({ type: 'cancel', target: id });
    };
    const stream = new HostGeneration(cancel);
    if (signal?.aborted) {
      stream.finish({ text: '', finishReason: 'aborted', stats: emptyStats() });
      return stream;
    }
    signal?.addEventListener('abort', cancel, { once: true });
    void stream.result.finally(() => signal?.removeEventListener('abort', cancel)).catch(() => {});
    try {
      id = this.#send({ type: 'generate', input, options: rest }, 'generate', { stream });
    } catch (err) {
      stream.fail(err as Error);
    }
    return stream;
  }

  /** Speech from the loaded model's talker; options.signal (or breaking off the loop) stops it in the host. */
  speak(options: SpeakOptions = {}): HostSpeech {
    const { signal, ...rest } = options;
    let id = 0;
    const cancel = () => {
      if (id && this.alive) this.#post({ type: 'cancel', target: id });
    };
    const speech = new HostSpeech(cancel, () => signal?.removeEventListener('abort', onAbort));
    const onAbort = () => {
      speech.silence();
      cancel();
    };
    if (signal?.aborted) {
      speech.end();
      return speech;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      id = this.#send({ type: 'speak', options: rest }, 'speak', { speech });
    } catch (err) {
      speech.end(err as Error);
    }
    return speech;
  }

  complete(input: string | ChatMessage[], options: GenerateOptions = {}): Promise<GenerationResult> {
    return this.generate(input, options).complete();
  }

  async stats(): Promise<GenerationStats | null> {
    return (await this.#request({ type: 'stats' }, 'stats')) as GenerationStats | null;
  }

  async reset(): Promise<void> {
    await this.#request({ type: 'reset' }, 'reset');
  }

  async unload(): Promise<void> {
    await this.#request({ type: 'unload' }, 'unload');
  }

  /** Asks the host to exit (it disposes its model), SIGKILL after exitTimeoutMs. Idempotent. */
  async close(): Promise<HostExit> {
    const child = this.#child;
    if (!child || this.#exit) return this.#exit ?? { code: 0, signal: null };
    this.#closing = true;
    const exited = new Promise<HostExit>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    try {
      this.#post({ type: 'exit' });
    } catch {
      // channel already gone; the exit event follows
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), this.#options.exitTimeoutMs ?? 5000);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills the host process (the model goes with it). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.#child?.kill(signal);
  }

  /** Replaces an exited (or running) host by a fresh one; the model must be loaded again. */
  async restart(): Promise<void> {
    if (this.alive) await this.close();
    this.#closing = false;
    await this.#spawn();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #spawn(): Promise<void> {
    this.#exit = undefined;
    const { child, ready } = forkHost({
      name: this.name,
      ...(this.#options.cwd ? { cwd: this.#options.cwd } : {}),
      ...(this.#options.env ? { env: this.#options.env } : {}),
      timeoutMs: this.#timeout(),
      log: this.#log,
      onLog: (stream, line) => this.events.emit('log', { stream, line }),
    });
    this.#child = child;
    child.on('message', (m: unknown) => {
      if (isHostResponse(m) && m.type !== 'ready') this.#pending.deliver(m);
    });
    child.on('exit', (code, signal) => this.#onExit(child, { code, signal }));
    child.on('error', (err) => this.#log.error('host process error', { err }));
    await ready;
    this.#log.debug('ready', { pid: child.pid });
  }

  #timeout(): number {
    return this.#options.startTimeoutMs ?? defaultStartTimeoutMs();
  }

  #onExit(child: ChildProcess, exit: HostExit): void {
    if (this.#child !== child) return;
    this.#exit = exit;
    const expected = this.#closing;
    if (!expected) this.#log.error('engine host exited', { pid: child.pid, ...exit });
    this.#pending.failAll(
      (what) =>
        new EngineError(
          'EHOSTEXIT',
          `engine host ${this.name} (pid ${child.pid}) exited with ${describeExit(exit)} during ${what}`,
          { ...exit, pid: child.pid },
        ),
    );
    this.events.emit('exit', { ...exit, expected });
  }

  #assertAlive(what: string): ChildProcess {
    const child = this.#child;
    if (!child || this.#exit || !child.connected) {
      const how = this.#exit ? ` (it exited with ${describeExit(this.#exit)})` : '';
      throw new EngineError('EHOSTEXIT', `engine host ${this.name} is not running${how}; cannot ${what}`, {
        ...this.#exit,
      });
    }
    return child;
  }

  #post(msg: Outgoing): void {
    const child = this.#assertAlive(msg.type);
    child.send({ ...msg, id: this.#pending.nextId() } as HostRequest);
  }

  #send(msg: Outgoing, what: string, into: { stream?: HostGeneration; speech?: HostSpeech } = {}): number {
    const child = this.#assertAlive(what);
    const id = this.#pending.add(what, into);
    child.send({ ...msg, id } as HostRequest);
    return id;
  }

  #request(msg: Outgoing, what: string): Promise<HostResultValue> {
    try {
      const child = this.#assertAlive(what);
      const { id, answer } = this.#pending.addCall(what);
      try {
        child.send({ ...msg, id } as HostRequest);
      } catch (err) {
        this.#pending.drop(id);
        throw err;
      }
      return answer;
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

function emptyStats(): GenerationStats {
  return {
    promptTokens: 0,
    generatedTokens: 0,
    historyTokens: 0,
    prefillUs: 0,
    decodeUs: 0,
    sampleUs: 0,
    visionUs: 0,
    audioUs: 0,
    ttfaUs: 0,
    audioInputSeconds: 0,
    finishReason: 'aborted',
  };
}
