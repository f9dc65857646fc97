import { EventEmitter } from 'node:events';

// Event names and payloads checked at compile time; the runtime is Node's EventEmitter.
export type EventMap = Record<string, unknown>;

export class TypedEventEmitter<E extends EventMap> {
  readonly #ee = new EventEmitter();

  constructor() {
    this.#ee.setMaxListeners(100);
  }

  on<K extends keyof E & string>(event: K, listener: (payload: E[K]) => void): () => void {
    this.#ee.on(event, listener);
    return () => this.#ee.off(event, listener);
  }

  once<K extends keyof E & string>(event: K, listener: (payload: E[K]) => void): void {
    this.#ee.once(event, listener);
  }

  off<K extends keyof E & string>(event: K, listener: (payload: E[K]) => void): void {
    this.#ee.off(event, listener);
  }

  emit<K extends keyof E & string>(event: K, payload: E[K]): void {
    this.#ee.emit(event, payload);
  }

  listenerCount<K extends keyof E & string>(event: K): number {
    return this.#ee.listenerCount(event);
  }
}
