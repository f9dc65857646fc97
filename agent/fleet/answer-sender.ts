import type { IClientPublishOptions } from 'mqtt';
import type { Clock } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { AgentConnection } from './agent-connection.js';
import type { OutgoingResponse } from './command-server.js';

// Sends a command's answer, QoS 1, and sends it again on the next connection when the one it went out on was
// lost before the broker acknowledged it, for as long as the requester still waits (the request's expiresAt).
// A node of a broker cluster that cannot store a QoS 1 message closes the connection: nats-server 2.9 does so
// when the JetStream stream behind MQTT QoS 1 has no leader for its 4 s API timeout, as after a node dies
// (seen: the answers of two boards to a fan-out lost that way, test/integration/fleet-cluster). The requester
// may then get an answer twice (the node had passed it on before it failed to store it); the operator keeps the
// first per device. An answer to a request without expiresAt is sent once, as before.

/** Answers held for the next connection at most; the oldest goes first beyond that. */
const MAX_PENDING = 100;

/** The part of the agent's connection an answer needs. */
export type AnswerConnection = Pick<AgentConnection, 'v5' | 'publish'>;

export class AnswerSender {
  readonly #connection: AnswerConnection;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** Answers whose connection was lost before their PUBACK, oldest first. */
  #pending: OutgoingResponse[] = [];

  constructor(connection: AnswerConnection, clock: Clock, logger: Logger) {
    this.#connection = connection;
    this.#clock = clock;
    this.#log = logger;
  }

  /** How many answers wait for the next connection. */
  get pending(): number {
    return this.#pending.length;
  }

  send(out: OutgoingResponse): void {
    const opts: IClientPublishOptions = { qos: 1 };
    if (this.#connection.v5 && out.correlationData)
      opts.properties = { correlationData: out.correlationData };
    this.#connection.publish(out.topic, out.payload, opts).catch((err: unknown) => {
      if (out.expiresAt === undefined || out.expiresAt <= this.#clock.nowMs()) {
        this.#log.debug('answer not delivered', { topic: out.topic, error: errorMessage(err) });
        return;
      }
      this.#log.debug('answer kept for the next connection', { topic: out.topic, error: errorMessage(err) });
      this.#pending.push(out);
      if (this.#pending.length > MAX_PENDING) this.#pending.shift();
    });
  }

  /** On every (re)connection: the kept answers whose requester still waits go out again. */
  resend(): void {
    const now = this.#clock.nowMs();
    const due = this.#pending.splice(0).filter((out) => (out.expiresAt ?? 0) > now);
    for (const out of due) this.send(out);
  }
}
