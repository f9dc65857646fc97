// Test doubles for the runtime's ports: engine hosts as in-process objects, memory as a counter. Unit tests only.

import test from 'ava';
import {
  EngineFailure,
  type EngineHost,
  type EngineHostFactory,
  type GenerateEvent,
  type GenerateRequest,
  type HostExit,
  type InstanceSpec,
  type LoadReport,
  type SpeakRequest,
  type SpeechOut,
  type TensorIn,
  type TensorOut,
} from '../../agent/runtime/engine/engine-port.js';
import type { SystemMemory } from '../../agent/runtime/engine/proc-memory.js';
import type { KvReuseOutcome } from '../../agent/telemetry/runtime-stats.js';
import { type Clock, sleep, systemClock } from '../../lib/clock.js';

const MiB = 1024 * 1024;

export interface FakeBehaviour {
  /** Backends whose load fails with this message. */
  loadFails: Map<string, string>;
  /** Backends whose load never finishes (a hung driver). */
  loadHangs: Set<string>;
  /** Backends whose generation throws a backend fault. */
  generateFaults: Map<string, string>;
  tokenDelayMs: number;
  tokens: number;
}

export class FakeHost implements EngineHost {
  static nextPid = 5000;
  readonly pid = FakeHost.nextPid++;
  readonly exited: Promise<HostExit>;
  spec: InstanceSpec | undefined;
  alive = true;
  forwards = 0;
  /** Generations started here and tokens sent: tests wait on these, not on the clock. */
  generations = 0;
  tokensSent = 0;
  #exit!: (e: HostExit) => void;
  /** Aborted when the host dies, so a token wait ends at once (a killed process stops mid-token). */
  readonly #dead = new AbortController();
  readonly #world: FakeWorld;
  /** The prompt whose KV this host holds. */
  #held: string | undefined;

  constructor(world: FakeWorld) {
    this.#world = world;
    this.exited = new Promise((resolve) => {
      this.#exit = resolve;
    });
  }

  /** Times dropSnapshots() was called. */
  snapshotDrops = 0;
  #snapshotsHeld = true;

  async dropSnapshots(): Promise<number> {
    this.snapshotDrops++;
    const freed = this.#snapshotsHeld ? this.#world.snapshotBytes : 0;
    this.#snapshotsHeld = false;
    this.#world.memAvailable += freed;
    return freed;
  }

  async load(spec: InstanceSpec): Promise<LoadReport> {
    await sleep(5);
    if (this.#world.behaviour.loadHangs.has(spec.config.backend_type)) await new Promise(() => {});
    const fail = this.#world.behaviour.loadFails.get(spec.config.backend_type);
    if (fail) throw new EngineFailure('load', fail);
    this.spec = spec;
    this.#world.memAvailable -= 100 * MiB;
    return {
      cache: spec.config.backend_type === 'cpu' ? 'none' : 'cold',
      // As the engine reports it: the weight files read, then MNN's own load.
      engine: { readMs: 1, readBytes: 100 * MiB, mnnLoadMs: 3 },
    };
  }

  async *generate(request: GenerateRequest, signal?: AbortSignal): AsyncIterable<GenerateEvent> {
    const spec = this.spec;
    if (!spec) throw new EngineFailure('request', 'no model loaded');
    const n = request.maxNewTokens ?? this.#world.behaviour.tokens;
    this.generations++;
    for (let i = 0; i < n; i++) {
      await this.#tokenDelay();
      if (!this.alive) throw new EngineFailure('crash', `host ${this.pid} connection closed`);
      if (signal?.aborted) throw new EngineFailure('cancelled', 'generation cancelled');
      const fault = this.#world.behaviour.generateFaults.get(spec.config.backend_type);
      if (fault) throw new EngineFailure('backend', fault);
      this.tokensSent++;
      yield { type: 'text', text: `${spec.version}:${i} ` };
    }
    yield {
      type: 'done',
      finishReason: 'length',
      stats: {
        promptTokens: 3,
        decodeTokens: n,
        prefillMs: 1,
        decodeMs: n,
        reuse: this.#reuse(request.prompt),
      },
    };
  }

  /** Prefix reuse as an engine host does it, with the prompt's characters as its tokens. */
  #reuse(input: GenerateRequest['prompt']): KvReuseOutcome {
    const prompt = typeof input === 'string' ? input : JSON.stringify(input);
    const held = this.#held;
    this.#held = prompt;
    if (held === undefined)
      return { outcome: 'miss', reason: 'cold', reusedTokens: 0, prefilledTokens: prompt.length };
    let keep = 0;
    while (keep < held.length && keep < prompt.length - 1 && held[keep] === prompt[keep]) keep++;
    const outcome = keep === 0 ? 'miss' : keep === held.length ? 'hit' : 'partial';
    return {
      outcome,
      reason: outcome === 'hit' ? null : 'diverged',
      reusedTokens: keep,
      prefilledTokens: prompt.length - keep,
    };
  }

  /** A talker stand-in: one 24 kHz chunk per word, each as long as the word has letters (in ms). */
  async *speak(request: SpeakRequest, signal?: AbortSignal): AsyncIterable<SpeechOut> {
    if (!this.spec) throw new EngineFailure('request', 'no model loaded');
    for (const word of request.text.split(/\s+/).filter(Boolean)) {
      await this.#tokenDelay();
      if (!this.alive) throw new EngineFailure('crash', `host ${this.pid} connection closed`);
      if (signal?.aborted) throw new EngineFailure('cancelled', 'speech cancelled');
      yield { samples: new Float32Array(24 * word.length).fill(0.1), sampleRate: 24000 };
    }
  }

  /** A VAD stand-in: speech when the frame's peak is above 0.1; the state comes back as it went in. */
  async forward(inputs: TensorIn[], signal?: AbortSignal): Promise<TensorOut[]> {
    if (!this.spec) throw new EngineFailure('request', 'no model loaded');
    if (!this.alive) throw new EngineFailure('crash', `host ${this.pid} connection closed`);
    signal?.throwIfAborted();
    this.forwards++;
    const frame = inputs[0]?.data ?? new Float32Array(0);
    let peak = 0;
    for (const v of frame) peak = Math.max(peak, Math.abs(v));
    return [
      { name: 'output', data: new Float32Array([peak > 0.1 ? 0.9 : 0.1]), shape: [1, 1] },
      { name: 'stateN', data: Float32Array.from(inputs[1]?.data ?? []), shape: [2, 1, 128] },
    ];
  }

  async memory() {
    return { rssBytes: this.#world.rssBytes, peakRssBytes: this.#world.peakRssBytes };
  }

  async unload(): Promise<void> {}

  async stop(): Promise<HostExit> {
    this.#die({ code: 0, signal: null });
    return this.exited;
  }

  kill(): void {
    this.#die({ code: null, signal: 'SIGKILL' });
  }

  #tokenDelay(): Promise<void> {
    return sleep(this.#world.behaviour.tokenDelayMs, this.#dead.signal).catch(() => undefined);
  }

  #die(exit: HostExit): void {
    if (!this.alive) return;
    this.alive = false;
    this.#dead.abort();
    if (this.spec && !this.#world.leakOnExit) this.#world.memAvailable += 100 * MiB;
    this.#exit(exit);
  }
}

export class FakeWorld implements EngineHostFactory, SystemMemory {
  readonly engineVersion = '3.6.1-test';
  memAvailable = 4000 * MiB;
  /** What every host reports as its VmRSS / VmHWM. */
  rssBytes = 100 * MiB;
  peakRssBytes = 110 * MiB;
  /** Exited hosts do not give their memory back (a leak the release check must catch). */
  leakOnExit = false;
  /** What each loaded host's conversation snapshots hold: dropSnapshots() gives it back to MemAvailable. */
  snapshotBytes = 0;
  hosts: FakeHost[] = [];
  behaviour: FakeBehaviour = {
    loadFails: new Map(),
    loadHangs: new Set(),
    generateFaults: new Map(),
    tokenDelayMs: 2,
    tokens: 5,
  };

  async start(): Promise<EngineHost> {
    const h = new FakeHost(this);
    this.hosts.push(h);
    return h;
  }

  async memAvailableBytes(): Promise<number> {
    return this.memAvailable;
  }

  async processAlive(pid: number): Promise<boolean> {
    return this.hosts.some((h) => h.pid === pid && h.alive);
  }

  live(): FakeHost[] {
    return this.hosts.filter((h) => h.alive);
  }
}

/** The system's monotonic clock, except that a test may stop it and later move it on by a set amount. */
export class StoppableClock implements Clock {
  #stoppedAt: number | undefined;
  #offset = 0;

  monotonicMs(): number {
    return this.#stoppedAt ?? systemClock.monotonicMs() + this.#offset;
  }

  nowMs(): number {
    return systemClock.nowMs();
  }

  stop(): void {
    this.#stoppedAt = this.monotonicMs();
  }

  /** Runs again from `ms` after where it stopped (never backwards). */
  resumeAfter(ms: number): void {
    if (this.#stoppedAt === undefined) return;
    this.#offset = this.#stoppedAt + ms - systemClock.monotonicMs();
    this.#stoppedAt = undefined;
  }
}

// Whatever a test file registers here is stopped after its tests, also what a failed assertion left running: a
// runtime's timers and hosts would otherwise keep the worker alive ("Failed to exit").
const toStop = new Set<{ stop(): Promise<unknown> }>();
test.after.always(async () => {
  await Promise.all([...toStop].map((x) => x.stop().catch(() => undefined)));
});

/** Registers `x` to be stopped after the file's tests; returns it. */
export function stopAfterTests<T extends { stop(): Promise<unknown> }>(x: T): T {
  toStop.add(x);
  return x;
}
