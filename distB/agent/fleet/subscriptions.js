/** MQTT filter matching: `+` one level, a trailing `#` any number (including none), `$` topics excluded. */
export function topicMatches(filter, topic) {
    if (topic.startsWith('$') && !filter.startsWith('$'))
        return false;
    const f = filter.split('/');
    const t = topic.split('/');
    for (let i = 0; i < f.length; i++) {
        const level = f[i];
        if (level === '#')
            return i === f.length - 1;
        if (i >= t.length)
            return false;
        if (level !== '+' && level !== t[i])
            return false;
    }
    return f.length === t.length;
}
export class SubscriptionRegistry {
    #entries = new Map();
    #log;
    #client;
    constructor(logger) {
        this.#log = logger;
    }
    /**
     * Subscribes `filters` (now when connected, else on the next connection) and routes their messages to
     * `handler`. Returns the function that removes them again; a filter shared with another handler stays.
     */
    add(filters, handler) {
        const fresh = [];
        for (const filter of filters) {
            let entry = this.#entries.get(filter);
            if (!entry) {
                entry = { filter, handlers: new Set(), state: 'pending' };
                this.#entries.set(filter, entry);
                fresh.push(filter);
            }
            entry.handlers.add(handler);
        }
        if (fresh.length > 0 && this.#client)
            this.#subscribe(this.#client, fresh);
        let removed = false;
        return () => {
            if (removed)
                return;
            removed = true;
            const gone = [];
            for (const filter of filters) {
                const entry = this.#entries.get(filter);
                if (!entry)
                    continue;
                entry.handlers.delete(handler);
                if (entry.handlers.size === 0) {
                    this.#entries.delete(filter);
                    gone.push(filter);
                }
            }
            if (gone.length > 0 && this.#client)
                this.#client.unsubscribe(gone, (err) => {
                    if (err)
                        this.#log.debug('unsubscribe failed', { filters: gone, error: err.message });
                });
        };
    }
    /**
     * Called after every CONNACK: subscribes every filter on this connection. Resolves once the broker answered
     * (granted or refused), so the device announces itself online only when it is listening.
     */
    connected(client) {
        this.#client = client;
        for (const entry of this.#entries.values()) {
            entry.state = 'pending';
            delete entry.error;
        }
        if (this.#entries.size === 0)
            return Promise.resolve();
        return new Promise((resolve) => this.#subscribe(client, [...this.#entries.keys()], resolve));
    }
    /** Called when the connection is lost: nothing is subscribed until the next `connected`. */
    disconnected() {
        this.#client = undefined;
        for (const entry of this.#entries.values())
            entry.state = 'pending';
    }
    /** Hands a message to every handler whose filter matches; false when none does. */
    dispatch(topic, payload, packet) {
        const handlers = new Set();
        for (const entry of this.#entries.values())
            if (topicMatches(entry.filter, topic))
                for (const h of entry.handlers)
                    handlers.add(h);
        for (const handler of handlers) {
            try {
                handler(topic, payload, packet);
            }
            catch (err) {
                // One module's bug must not keep the message from the others, nor reach the MQTT client's loop.
                this.#log.error('message handler failed', { topic, error: err.message });
            }
        }
        return handlers.size > 0;
    }
    state() {
        return [...this.#entries.values()].map((e) => ({
            filter: e.filter,
            state: e.state,
            ...(e.error !== undefined ? { error: e.error } : {}),
        }));
    }
    #subscribe(client, filters, answered) {
        const request = Object.fromEntries(filters.map((f) => [f, { qos: 1 }]));
        client.subscribe(request, (err, granted) => {
            answered?.();
            if (client !== this.#client)
                return; // answered on a connection that is gone; the next one re-subscribes
            if (err) {
                // The connection dropped before SUBACK: `connected` runs again on the next CONNACK.
                this.#log.debug('subscribe interrupted', { filters, error: err.message });
                return;
            }
            for (const g of granted ?? []) {
                const entry = this.#entries.get(g.topic);
                if (!entry)
                    continue;
                // SUBACK codes of 0x80 and above refuse the filter (an ACL, a broker limit).
                if (g.qos >= 0x80) {
                    entry.state = 'denied';
                    entry.error = `the broker refused the subscription (SUBACK 0x${g.qos.toString(16)})`;
                    this.#log.warn('subscription refused by the broker', { filter: g.topic, code: g.qos });
                }
                else
                    entry.state = 'active';
            }
        });
    }
}
//# sourceMappingURL=subscriptions.js.map