// One typed bus for events that cross module boundaries (zigbee2mqtt's pattern): every listener is registered
// under the name of the module that owns it, and removeOwner(name) drops all of them when that module stops, so
// a stopped module is never called and nothing leaks across a restart. Delivery is synchronous and in
// registration order; a listener that throws is reported and the others still run.

export type BusListener<T> = (payload: T) => void;

interface Entry {
  owner: string;
  listener: BusListener<never>;
}

export class EventBus<Events extends { [K in keyof Events]: unknown }> {
  readonly #listeners = new Map<keyof Events, Entry[]>();
  readonly #onError: (event: string, owner: string, err: unknown) => void;

  /** `onError`: told of a listener that threw (the agent logs it); by default the error is dropped. */
  constructor(onError: (event: string, owner: string, err: unknown) => void = () => {}) {
    this.#onError = onError;
  }

  /** Registers `listener` for `event` under `owner`; returns a function that removes just this one. */
  on<K extends keyof Events>(owner: string, event: K, listener: BusListener<Events[K]>): () => void {
    const entry: Entry = { owner, listener: listener as BusListener<never> };
    this.#listeners.set(event, [...(this.#listeners.get(event) ?? []), entry]);
    return () => {
      const rest = (this.#listeners.get(event) ?? []).filter((e) => e !== entry);
      this.#listeners.set(event, rest);
    };
  }

  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    // A copy: a listener that removes itself (or its owner) does not skip the next one.
    for (const { owner, listener } of [...(this.#listeners.get(event) ?? [])]) {
      try {
        (listener as BusListener<Events[K]>)(payload);
      } catch (err) {
        this.#onError(String(event), owner, err);
      }
    }
  }

  /** Drops every listener `owner` registered (the module stopped). */
  removeOwner(owner: string): void {
    for (const [event, entries] of this.#listeners)
      this.#listeners.set(
        event,
        entries.filter((e) => e.owner !== owner),
      );
  }

  /** How many listeners `event` has (all events when omitted), optionally only `owner`'s. */
  listenerCount(event?: keyof Events, owner?: string): number {
    const lists = event === undefined ? [...this.#listeners.values()] : [this.#listeners.get(event) ?? []];
    return lists.flat().filter((e) => owner === undefined || e.owner === owner).length;
  }
}
