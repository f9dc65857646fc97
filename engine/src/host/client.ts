// EngineHostClient: the agent's side of one engine host process. The runtime holds one per loaded model.
// Everything MNN does happens in the child, so a native crash, abort or OOM there fails the requests in flight
// with an error naming the exit signal, and the agent carries on (restart() brings up a fresh process).

import { type ChildProcess, fork } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, type Logger } from '../../../lib/log.js';
import { TypedEventEmitter } from '../../../lib/typed-events.js';
import { EngineError, type EngineErrorCode } from '../errors.js';
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
import { packageRootAbove } from '../package-root.js';
import type { ChatMessage } from '../prompt.js';
import type { WakeFiles } from '../wake.js';
import { onLines } from './lines.js';
import { HostGeneration, HostSpeech } from './streams.js';

export { type HostDelivery, HostGeneration, HostSpeech } from './streams.js';

import {
  type HostGraphOptions,
  type HostRequest,
  type HostResponse,
  type HostResultValue,
  type HostWakeOptions,
  isHostResponse,
  type LoadedGraph,
  type LoadedModel,
  type LoadedWake,
} from './protocol.js';
import { defaultStartTimeoutMs } from './start-timeout.js';

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

export interface HostExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface EngineHostEvents {
  [key: string]: unknown;
  exit: HostExit & { expected: boolean };
  log: { stream: 'stdout' | 'stderr'; line: string };
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Outgoing = DistributiveOmit<HostRequest, 'id'>;

interface Pending {
  what: string;
  resolve: (v: HostResultValue) => void;
  reject: (e: Error) => void;
  stream?: HostGeneration;
  speech?: HostSpeech;
}

function hostEntry(): { path: string; execArgv: string[] } {
  const self = fileURLToPath(import.meta.url);
  if (self.endsWith('.ts')) {
    // Running from source (tests, tsx): the child needs the same TypeScript loader.
    return {
      path: self.replace(/client\.ts$/, 'host-main.ts'),
      execArgv: ['--import', import.meta.resolve('tsx')],
    };
  }
  if (self.endsWith('client.js')) return { path: self.replace(/client\.js$/, 'host-main.js'), execArgv: [] };
  // Bundled into the CLI (dist/agent/cli): the host runs from tsc's tree, which the build keeps beside it.
  const root = packageRootAbove(dirname(self));
  if (!root) throw new Error(`cannot find the mnn-edge package above ${self} to start an engine host`);
  return { path: join(root, 'dist', 'engine', 'src', 'host', 'host-main.js'), execArgv: [] };
}

function describeExit(e: HostExit): string {
  return e.signal ? `signal ${e.signal}` : `code ${e.code}`;
}

export class EngineHostClient {
  readonly name: string;
  readonly events = new TypedEventEmitter<EngineHostEvents>();
  readonly #options: EngineHostOptions;
  readonly #log: Logger;
  #child: ChildProcess | undefined;
  #exit: HostExit | undefined;
  #closing = false;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  readonly #recentStderr: string[] = [];

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
      id = this.#send({ type: 'generate', input, options: rest }, 'generate', stream);
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
      id = this.#send({ type: 'speak', options: rest }, 'speak', undefined, speech);
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
    const entry = hostEntry();
    this.#exit = undefined;
    this.#recentStderr.length = 0;
    const child = fork(entry.path, [], {
      execArgv: entry.execArgv,
      cwd: this.#options.cwd ?? tmpdir(),
      env: this.#options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    this.#child = child;
    // MNN prints diagnostics on stdout: they become log records, never protocol.
    onLines(child.stdout!, (line) => {
      this.#log.info('mnn', { pid: child.pid, line });
      this.events.emit('log', { stream: 'stdout', line });
    });
    onLines(child.stderr!, (line) => {
      this.#recentStderr.push(line);
      if (this.#recentStderr.length > 20) this.#recentStderr.shift();
      this.#log.warn('stderr', { pid: child.pid, line });
      this.events.emit('log', { stream: 'stderr', line });
    });
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(
          new EngineError('ETIMEDOUT', `engine host ${this.name} did not start within ${this.#timeout()} ms`),
        );
      }, this.#timeout());
      child.once('message', (m: unknown) => {
        clearTimeout(timer);
        if (isHostResponse(m) && m.type === 'ready') resolve();
        else
          reject(
            new EngineError('EENGINE', `engine host ${this.name} sent ${JSON.stringify(m)} instead of ready`),
          );
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        const tail = this.#recentStderr.slice(-5).join(' | ');
        reject(
          new EngineError(
            'EHOSTEXIT',
            `engine host ${this.name} exited with ${describeExit({ code, signal })} before it was ready${tail ? `: ${tail}` : ''}`,
            { code, signal },
          ),
        );
      });
    });
    child.on('message', (m: unknown) => {
      if (isHostResponse(m)) this.#onMessage(m);
    });
    child.on('exit', (code, signal) => this.#onExit(child, { code, signal }));
    child.on('error', (err) => this.#log.error('host process error', { err }));
    await ready;
    this.#log.debug('ready', { pid: child.pid });
  }

  #timeout(): number {
    return this.#options.startTimeoutMs ?? defaultStartTimeoutMs();
  }

  #onMessage(m: HostResponse): void {
    if (m.type === 'ready') return;
    const p = this.#pending.get(m.id);
    if (!p) return;
    switch (m.type) {
      case 'pieces':
        p.stream?.pushBatch(m.pieces, m.sentUs);
        return;
      case 'audio':
        p.speech?.push({ samples: m.samples, sampleRate: m.sampleRate, last: m.last });
        return;
      case 'spoken':
        this.#pending.delete(m.id);
        p.speech?.end();
        return;
      case 'done':
        this.#pending.delete(m.id);
        p.stream?.finish(m.result, m.delivery);
        return;
      case 'result':
        this.#pending.delete(m.id);
        p.resolve(m.value);
        return;
      case 'error': {
        this.#pending.delete(m.id);
        const err = new EngineError(m.error.code as EngineErrorCode, m.error.message);
        if (p.stream) p.stream.fail(err);
        else if (p.speech) p.speech.end(err);
        else p.reject(err);
        return;
      }
    }
  }

  #onExit(child: ChildProcess, exit: HostExit): void {
    if (this.#child !== child) return;
    this.#exit = exit;
    const expected = this.#closing;
    if (!expected) this.#log.error('engine host exited', { pid: child.pid, ...exit });
    for (const [id, p] of this.#pending) {
      this.#pending.delete(id);
      const err = new EngineError(
        'EHOSTEXIT',
        `engine host ${this.name} (pid ${child.pid}) exited with ${describeExit(exit)} during ${p.what}`,
        { ...exit, pid: child.pid },
      );
      if (p.stream) p.stream.fail(err);
      else if (p.speech) p.speech.end(err);
      else p.reject(err);
    }
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
    child.send({ ...msg, id: this.#nextId++ } as HostRequest);
  }

  #send(msg: Outgoing, what: string, stream?: HostGeneration, speech?: HostSpeech): number {
    const child = this.#assertAlive(what);
    const id = this.#nextId++;
    const pending: Pending = {
      what,
      resolve: () => {},
      reject: () => {},
      ...(stream ? { stream } : {}),
      ...(speech ? { speech } : {}),
    };
    this.#pending.set(id, pending);
    child.send({ ...msg, id } as HostRequest);
    return id;
  }

  #request(msg: Outgoing, what: string): Promise<HostResultValue> {
    return new Promise<HostResultValue>((resolve, reject) => {
      try {
        const id = this.#send(msg, what);
        const p = this.#pending.get(id)!;
        p.resolve = resolve;
        p.reject = reject;
      } catch (err) {
        reject(err);
      }
    });
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
