import type { SlotName } from '../../plan/types.js';
import type { KeepAlive } from './keep-alive-duration.js';

// When a model that an Ollama client asked to keep only for a while is unloaded. A slot's timer stops while a
// request runs on it and starts again when the last one ends; a request without keep_alive leaves the slot as
// the last one set it, and the board's own default is to keep every placed model loaded (its voice loop and
// camera use them too). Unloading goes through the runtime (park): the next request on the slot, from any
// workload, loads the model again.

export interface KeepAliveDeps {
  park(slot: SlotName, reason: string): Promise<unknown>;
  nowMs(): number;
  onError(slot: SlotName, err: unknown): void;
}

interface SlotTimer {
  running: number;
  policy: KeepAlive;
  timer?: NodeJS.Timeout;
  /** Wall-clock ms when the model goes, while a timer runs. */
  expiresAtMs?: number;
}

export class KeepAliveTimers {
  readonly #deps: KeepAliveDeps;
  readonly #slots = new Map<SlotName, SlotTimer>();

  constructor(deps: KeepAliveDeps) {
    this.#deps = deps;
  }

  #state(slot: SlotName): SlotTimer {
    let s = this.#slots.get(slot);
    if (!s) {
      s = { running: 0, policy: { kind: 'forever' } };
      this.#slots.set(slot, s);
    }
    return s;
  }

  /** A request starts on the slot: no unload while it runs. */
  begin(slot: SlotName, policy: KeepAlive | undefined): void {
    const s = this.#state(slot);
    s.running++;
    if (policy) s.policy = policy;
    this.#clear(s);
  }

  /** A request on the slot ended: the slot's policy decides what happens once none runs. */
  end(slot: SlotName): void {
    const s = this.#state(slot);
    s.running = Math.max(0, s.running - 1);
    if (s.running > 0 || s.policy.kind === 'forever') return;
    const { ms } = s.policy;
    if (ms === 0) {
      this.#unload(slot, 'keep_alive 0');
      return;
    }
    s.expiresAtMs = this.#deps.nowMs() + ms;
    s.timer = setTimeout(() => {
      s.timer = undefined;
      s.expiresAtMs = undefined;
      this.#unload(slot, `keep_alive ${ms} ms passed`);
    }, ms);
    s.timer.unref();
  }

  /** When the slot's model is to be unloaded (ms since the epoch); undefined: it stays loaded. */
  expiresAt(slot: SlotName): number | undefined {
    return this.#slots.get(slot)?.expiresAtMs;
  }

  /** An unload asked for now (keep_alive 0 without a prompt). */
  unloadNow(slot: SlotName, reason: string): Promise<void> {
    const s = this.#state(slot);
    this.#clear(s);
    // A later request without keep_alive keeps the model loaded again, as a new load would in Ollama.
    s.policy = { kind: 'forever' };
    return this.#deps.park(slot, reason).then(() => undefined);
  }

  close(): void {
    for (const s of this.#slots.values()) this.#clear(s);
    this.#slots.clear();
  }

  #clear(s: SlotTimer): void {
    if (s.timer) clearTimeout(s.timer);
    s.timer = undefined;
    s.expiresAtMs = undefined;
  }

  #unload(slot: SlotName, reason: string): void {
    const s = this.#state(slot);
    s.policy = { kind: 'forever' };
    this.#deps.park(slot, `Ollama API: ${reason}`).catch((err: unknown) => this.#deps.onError(slot, err));
  }
}
