import type { Logger } from '../../lib/log.js';

// The one owner of the agent's MQTT subscriptions. Modules add topic filters with a handler at any time —
// before the first connection, while offline, while connected — and the registry subscribes every filter
// after each CONNACK, whether or not the broker says it kept the session: a broker restarted without
// persistence, an expired session or a clean start all forget subscriptions, and re-subscribing an existing
// one is harmless. Incoming messages are routed here by filter, so no module listens on the client itself.
// A filter the broker refuses is asked for again on the same connection, with a growing wait: a NATS node
// answers SUBACK 0x80 while JetStream cannot create the subscription's consumer (a leader election, an
// overloaded cluster) and grants the same filter later; a refusal that stays (an ACL) costs one SUBSCRIBE
// a minute.
// Each filter has its QoS (the highest any of its adders asked for). QoS 1 is for messages that must wait in
// the broker session while the device is away (its own commands); a filter whose messages are retained (OTA
// jobs and root rotations) or whose sender has a deadline anyway (fleet commands, Home Assistant's birth)
// takes QoS 0: the retained copy comes with every SUBSCRIBE, which this registry sends after every CONNACK.
// On NATS every QoS 1 subscription is a JetStream consumer (a raft group per filter per device), a QoS 0 one
// a plain subscription; docs/PROTOCOL.md lists the device's filters with their QoS.
// A QoS 0 delivery lost on a live connection (a NATS route between cluster nodes that drops and reconnects
// loses what was in flight to plain subscriptions) comes back only with the next SUBSCRIBE: a filter added with
// `refreshMs` is subscribed again that often (jittered by ±50 %) while connected, so its retained message
// arrives again.

export interface MessagePacket {
  retain?: boolean;
  properties?: { responseTopic?: string; correlationData?: Buffer };
}

export type MessageHandler = (topic: string, payload: Buffer, packet: MessagePacket) => void;

/** The part of an MQTT.js client the registry uses. */
export interface SubscribingClient {
  subscribe(
    filters: Record<string, { qos: 0 | 1 | 2 }>,
    callback: (err: Error | null | undefined, granted?: readonly { topic: string; qos: number }[]) => void,
  ): unknown;
  unsubscribe(filters: string[], callback: (err?: Error | null) => void): unknown;
}

export type SubscriptionQos = 0 | 1;

export interface SubscriptionState {
  filter: string;
  qos: SubscriptionQos;
  /** `active` once the broker granted it on the current connection; `denied` when its SUBACK refused it. */
  state: 'pending' | 'active' | 'denied';
  error?: string;
}

interface Entry {
  filter: string;
  qos: SubscriptionQos;
  refreshMs?: number;
  handlers: Set<MessageHandler>;
  state: SubscriptionState['state'];
  error?: string;
}

/** MQTT filter matching: `+` one level, a trailing `#` any number (including none), `$` topics excluded. */
export function topicMatches(filter: string, topic: string): boolean {
  if (topic.startsWith('$') && !filter.startsWith('$')) return false;
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    const level = f[i];
    if (level === '#') return i === f.length - 1;
    if (i >= t.length) return false;
    if (level !== '+' && level !== t[i]) return false;
  }
  return f.length === t.length;
}

export interface RefusalRetry {
  /** The first wait after a refusal; doubled after every refusal in a row, up to `maxMs`. */
  minMs: number;
  maxMs: number;
}

export class SubscriptionRegistry {
  readonly #entries = new Map<string, Entry>();
  readonly #log: Logger;
  readonly #retry: RefusalRetry;
  #client: SubscribingClient | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #refreshTimer: NodeJS.Timeout | undefined;
  #refusedInARow = 0;

  constructor(logger: Logger, retry: RefusalRetry = { minMs: 2_000, maxMs: 60_000 }) {
    this.#log = logger;
    this.#retry = retry;
  }

  /**
   * Subscribes `filters` (now when connected, else on the next connection) and routes their messages to
   * `handler`, at `qos` (default 1). Returns the function that removes them again; a filter shared with another
   * handler stays. A filter already subscribed at QoS 0 that is added at QoS 1 is subscribed again at 1.
   */
  add(
    filters: readonly string[],
    handler: MessageHandler,
    qos: SubscriptionQos = 1,
    refresh?: { everyMs: number },
  ): () => void {
    const fresh: string[] = [];
    for (const filter of filters) {
      let entry = this.#entries.get(filter);
      if (!entry) {
        entry = { filter, qos, handlers: new Set(), state: 'pending' };
        this.#entries.set(filter, entry);
        fresh.push(filter);
      } else if (qos > entry.qos) {
        entry.qos = qos;
        fresh.push(filter);
      }
      if (refresh) entry.refreshMs = Math.min(entry.refreshMs ?? Infinity, refresh.everyMs);
      entry.handlers.add(handler);
    }
    if (fresh.length > 0 && this.#client) this.#subscribe(this.#client, fresh);
    if (refresh && this.#client && !this.#refreshTimer) this.#scheduleRefresh(this.#client);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      const gone: string[] = [];
      for (const filter of filters) {
        const entry = this.#entries.get(filter);
        if (!entry) continue;
        entry.handlers.delete(handler);
        if (entry.handlers.size === 0) {
          this.#entries.delete(filter);
          gone.push(filter);
        }
      }
      if (gone.length > 0 && this.#client)
        this.#client.unsubscribe(gone, (err) => {
          if (err) this.#log.debug('unsubscribe failed', { filters: gone, error: err.message });
        });
    };
  }

  /**
   * Called after every CONNACK: subscribes every filter on this connection. Resolves once the broker answered
   * (granted or refused), so the device announces itself online only when it is listening.
   */
  connected(client: SubscribingClient): Promise<void> {
    this.#client = client;
    this.#cancelRetry();
    this.#cancelRefresh();
    this.#scheduleRefresh(client);
    this.#refusedInARow = 0;
    for (const entry of this.#entries.values()) {
      entry.state = 'pending';
      delete entry.error;
    }
    if (this.#entries.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#subscribe(client, [...this.#entries.keys()], resolve));
  }

  /**
   * Subscribes these filters again on the current connection, so the broker re-sends their retained messages
   * (MQTT 3.1.1 §3.8.4, MQTT 5 with the default Retain Handling). False when there is no connection or a filter
   * is not registered.
   */
  resubscribe(filters: readonly string[]): boolean {
    if (!this.#client || filters.some((f) => !this.#entries.has(f))) return false;
    this.#subscribe(this.#client, [...filters]);
    return true;
  }

  /** Called when the connection is lost: nothing is subscribed until the next `connected`. */
  disconnected(): void {
    this.#client = undefined;
    this.#cancelRetry();
    this.#cancelRefresh();
    for (const entry of this.#entries.values()) entry.state = 'pending';
  }

  /** Hands a message to every handler whose filter matches; false when none does. */
  dispatch(topic: string, payload: Buffer, packet: MessagePacket): boolean {
    const handlers = new Set<MessageHandler>();
    for (const entry of this.#entries.values())
      if (topicMatches(entry.filter, topic)) for (const h of entry.handlers) handlers.add(h);
    for (const handler of handlers) {
      try {
        handler(topic, payload, packet);
      } catch (err) {
        // One module's bug must not keep the message from the others, nor reach the MQTT client's loop.
        this.#log.error('message handler failed', { topic, error: (err as Error).message });
      }
    }
    return handlers.size > 0;
  }

  state(): SubscriptionState[] {
    return [...this.#entries.values()].map((e) => ({
      filter: e.filter,
      qos: e.qos,
      state: e.state,
      ...(e.error !== undefined ? { error: e.error } : {}),
    }));
  }

  #subscribe(client: SubscribingClient, filters: string[], answered?: () => void): void {
    const request = Object.fromEntries(
      filters.map((f) => [f, { qos: this.#entries.get(f)?.qos ?? 1 }] as const),
    );
    client.subscribe(request, (err, granted) => {
      answered?.();
      if (client !== this.#client) return; // answered on a connection that is gone; the next one re-subscribes
      if (err) {
        // The connection dropped before SUBACK: `connected` runs again on the next CONNACK.
        this.#log.debug('subscribe interrupted', { filters, error: err.message });
        return;
      }
      let refused = false;
      for (const g of granted ?? []) {
        const entry = this.#entries.get(g.topic);
        if (!entry) continue;
        // SUBACK codes of 0x80 and above refuse the filter (an ACL, a broker limit, a busy cluster).
        if (g.qos >= 0x80) {
          refused = true;
          entry.state = 'denied';
          entry.error = `the broker refused the subscription (SUBACK 0x${g.qos.toString(16)})`;
          this.#log.warn('subscription refused by the broker', { filter: g.topic, code: g.qos });
        } else entry.state = 'active';
      }
      if (refused) this.#retryRefused(client);
      else if (!this.#retryTimer) this.#refusedInARow = 0;
    });
  }

  /** Asks again for every refused filter after the wait; the connection must still be the same. */
  #retryRefused(client: SubscribingClient): void {
    if (this.#retryTimer) return;
    const wait = Math.min(this.#retry.maxMs, this.#retry.minMs * 2 ** this.#refusedInARow);
    this.#refusedInARow++;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (client !== this.#client) return;
      const refused = [...this.#entries.values()].filter((e) => e.state === 'denied').map((e) => e.filter);
      if (refused.length > 0) this.#subscribe(client, refused);
    }, wait);
    this.#retryTimer.unref?.();
  }

  /** Subscribes the filters that asked for it again, every `refreshMs` ±50 %, on this connection. */
  #scheduleRefresh(client: SubscribingClient): void {
    const every = Math.min(...[...this.#entries.values()].map((e) => e.refreshMs ?? Infinity));
    if (!Number.isFinite(every)) return;
    this.#refreshTimer = setTimeout(
      () => {
        this.#refreshTimer = undefined;
        if (client !== this.#client) return;
        const due = [...this.#entries.values()].filter((e) => e.refreshMs !== undefined).map((e) => e.filter);
        if (due.length > 0) this.#subscribe(client, due);
        this.#scheduleRefresh(client);
      },
      every * (0.5 + Math.random()),
    );
    this.#refreshTimer.unref?.();
  }

  #cancelRefresh(): void {
    clearTimeout(this.#refreshTimer);
    this.#refreshTimer = undefined;
  }

  #cancelRetry(): void {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }
}
