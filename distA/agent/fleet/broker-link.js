import { connect } from 'mqtt';
import { errorMessage } from '../common/errors.js';
import { TypedEventEmitter } from '../common/typed-events.js';
import { backoffDelay, buildClientOptions, DEFAULT_RECONNECT } from './connection.js';
/** CONNACK refusals that mean "not this protocol level": 3.1.1 return code 1, MQTT 5 reason code 0x84. */
const PROTOCOL_REFUSED = new Set([1, 0x84]);
export class BrokerLink {
    events = new TypedEventEmitter();
    #o;
    #now;
    #client;
    /** CONNACK received: publishing works (answers to commands queued in the session, say). */
    #acked = false;
    /** And the subscriptions are in place: the device is listening. */
    #connected = false;
    #connectedSince = 0;
    #stopped = false;
    #started = false;
    #failures = 0;
    #timer;
    #retryAt;
    #lastError;
    /**
     * Completion callbacks of QoS 1 publishes awaiting their PUBACK on the current client. With a kept session
     * MQTT.js holds them for a resend on the same client, but each attempt is a new client: on close they fail
     * here, and their owners (the outbox) send again on the next connection.
     */
    #awaitingAck = new Set();
    /** The level that last connected (auto mode keeps it); undefined until then. */
    #negotiated;
    #attemptVersion;
    constructor(options) {
        this.#o = options;
        this.#now = options.now ?? Date.now;
        this.#attemptVersion = options.protocol === 'auto' ? 5 : options.protocol;
    }
    get url() {
        return this.#o.url;
    }
    get connected() {
        return this.#connected;
    }
    /** The level of the current connection, or of the attempt under way. */
    get protocolVersion() {
        return this.#negotiated ?? this.#attemptVersion;
    }
    /** The client once the broker accepted the connection; undefined while disconnected. */
    get client() {
        return this.#acked ? this.#client : undefined;
    }
    get lastError() {
        return this.#lastError;
    }
    status() {
        const url = this.#o.url;
        if (this.#stopped)
            return { state: 'stopped', url };
        if (this.#connected)
            return {
                state: 'connected',
                url,
                protocolVersion: this.protocolVersion,
                sinceMs: this.#connectedSince,
                ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
            };
        return {
            state: this.#timer !== undefined ? 'waiting' : 'connecting',
            url,
            ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
            ...(this.#retryAt !== undefined ? { retryAtMs: this.#retryAt } : {}),
            failedAttempts: this.#failures,
        };
    }
    /** Starts connecting in the background; never waits for the broker. */
    start() {
        if (this.#started)
            return;
        this.#started = true;
        this.#attempt();
    }
    /**
     * Publishes on the current connection; `done` gets an error at once when there is none (callers that must
     * not lose a message keep it themselves, like the outbox).
     */
    publish(topic, payload, opts, done) {
        const c = this.client;
        if (!c) {
            done?.(new Error('not connected to the broker'));
            return;
        }
        let settled = false;
        const fail = (err) => settle(err);
        const settle = (err) => {
            if (settled)
                return;
            settled = true;
            this.#awaitingAck.delete(fail);
            done?.(err);
        };
        this.#awaitingAck.add(fail);
        c.publish(topic, payload, opts, (err) => settle(err ?? undefined));
    }
    /** Ends the connection; `farewell` runs first while still connected (the clean offline status). */
    async stop(farewell) {
        if (this.#stopped)
            return;
        this.#stopped = true;
        if (this.#timer !== undefined)
            clearTimeout(this.#timer);
        this.#timer = undefined;
        const c = this.#client;
        if (!c)
            return;
        if (this.#acked && farewell)
            await farewell(c).catch(() => undefined);
        this.#acked = false;
        this.#connected = false;
        this.#o.subscriptions.disconnected();
        await c.endAsync(true).catch(() => undefined);
    }
    #attempt() {
        this.#timer = undefined;
        this.#retryAt = undefined;
        if (this.#stopped)
            return;
        const version = this.protocolVersion;
        const log = this.#o.logger;
        const options = buildClientOptions(this.#o.config, { url: this.#o.url, protocolVersion: version }, this.#o.clientId, this.#o.will(version));
        const client = connect(this.#o.url, options);
        this.#client = client;
        let refusedLevel = false;
        let closed = false;
        let attemptError;
        client.on('connect', () => {
            if (client !== this.#client)
                return;
            this.#acked = true;
            this.#failures = 0;
            if (this.#o.protocol === 'auto' && this.#negotiated === undefined)
                log.info('negotiated the MQTT protocol level', { protocolVersion: version });
            this.#negotiated = version;
            // Connected counts from the SUBACK: whatever is sent to the device after it says "online" reaches it.
            void this.#o.subscriptions.connected(client).then(() => {
                if (client !== this.#client || closed)
                    return;
                this.#connected = true;
                this.#connectedSince = this.#now();
                this.events.emit('connected', { url: this.#o.url, protocolVersion: version });
            });
        });
        client.on('message', (topic, payload, packet) => {
            if (client === this.#client)
                this.#o.subscriptions.dispatch(topic, payload, packet);
        });
        client.on('error', (err) => {
            attemptError = errorMessage(err);
            if (typeof err.code === 'number' && PROTOCOL_REFUSED.has(err.code))
                refusedLevel = true;
            log.debug('mqtt error', { error: attemptError, protocolVersion: version });
        });
        client.on('close', () => {
            if (closed || client !== this.#client)
                return;
            closed = true;
            const wasConnected = this.#acked;
            this.#acked = false;
            this.#connected = false;
            this.#client = undefined;
            client.end(true);
            const lost = new Error('connection closed before the broker acknowledged');
            for (const fail of [...this.#awaitingAck])
                fail(lost);
            if (wasConnected)
                this.#o.subscriptions.disconnected();
            if (this.#stopped)
                return;
            const reason = attemptError ?? 'connection closed';
            this.#lastError = reason;
            this.events.emit('disconnected', { reason });
            this.#scheduleNext(version, refusedLevel, reason);
        });
    }
    #scheduleNext(version, refusedLevel, reason) {
        let delay;
        if (refusedLevel && this.#o.protocol === 'auto') {
            // This broker does not speak that level: try the other one now, and learn again from scratch.
            this.#negotiated = undefined;
            this.#attemptVersion = version === 5 ? 4 : 5;
            if (version === 5) {
                this.#o.logger.info('the broker refused MQTT 5; trying MQTT 3.1.1', { url: this.#o.url });
                delay = 0;
            }
            else
                delay = backoffDelay(this.#failures++, this.#range(), this.#o.random);
        }
        else {
            delay = backoffDelay(this.#failures++, this.#range(), this.#o.random);
        }
        this.#retryAt = this.#now() + delay;
        this.#o.logger.info('broker connection down; retrying', {
            url: this.#o.url,
            reason,
            inMs: delay,
            failedAttempts: this.#failures,
        });
        this.#timer = setTimeout(() => this.#attempt(), delay);
    }
    #range() {
        return this.#o.config.reconnect ?? DEFAULT_RECONNECT;
    }
}
//# sourceMappingURL=broker-link.js.map