import type { Logger } from '../../lib/log.js';
import { decode, type StatusMessage } from './protocol.js';
import type { MessagePacket } from './subscriptions.js';

// Makes sure the broker keeps the device's own "online" status, not just that it was sent. A broker can
// acknowledge a retained PUBLISH and still not keep it: a NATS node whose retained-message stream has no leader
// (a cluster node just died) answers PUBACK after 4 s and drops the message, and the Last Will of an earlier
// connection can be stored after the device's newer "online" (docs/FLEET.md, "NATS: what a lost node needs").
// Either way the fleet would list a live board as offline until its next reconnection.
//
// So the device listens to its own status topic (QoS 0: no JetStream consumer on NATS). A will or any status
// saying it is offline while it is connected is answered with "online" again. And after each "online" it
// publishes, it asks for the retained copy (SUBSCRIBE again: the broker re-sends retained messages) with a
// growing wait until the copy is the one it sent; a live echo of its own publish proves nothing about storage,
// only a retained delivery does. One SUBSCRIBE per connection on a healthy broker.

export interface PresenceGuardOptions {
  deviceId: string;
  /** Publishes a fresh "online" status (retained) and returns its `ts`; undefined when not connected. */
  publishOnline: () => number | undefined;
  /** Sends SUBSCRIBE for the status topic again on the current connection; false when not connected. */
  readRetained: () => boolean;
  logger: Logger;
  /** First wait before reading the retained copy back; doubled after each check, up to `maxCheckMs`. */
  firstCheckMs?: number;
  maxCheckMs?: number;
}

export class PresenceGuard {
  readonly #o: Required<Omit<PresenceGuardOptions, 'logger'>> & { logger: Logger };
  /** `ts` of the "online" this connection last published; undefined while disconnected. */
  #published: number | undefined;
  #confirmed = false;
  #checks = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: PresenceGuardOptions) {
    this.#o = { firstCheckMs: 1_000, maxCheckMs: 60_000, ...options };
  }

  /** The device announced itself online (after a CONNACK, or a refresh): verify the broker keeps it. */
  published(ts: number): void {
    this.#published = ts;
    this.#confirmed = false;
    this.#checks = 0;
    this.#schedule();
  }

  disconnected(): void {
    this.#published = undefined;
    this.#stopChecks();
  }

  stop(): void {
    this.disconnected();
  }

  /** Whether the broker's retained status is the last "online" this connection sent. */
  get confirmed(): boolean {
    return this.#confirmed;
  }

  /** A message on the device's own status topic. */
  onStatus(payload: Buffer, packet: MessagePacket): void {
    if (this.#published === undefined) return; // not connected yet: onConnect publishes anyway
    let status: StatusMessage;
    try {
      status = decode<StatusMessage>('status', payload);
    } catch {
      return; // someone else's malformed retained message: the next "online" replaces it
    }
    if (status.deviceId !== this.#o.deviceId) return;
    const ours = status.state === 'online' && status.ts === this.#published;
    if (ours) {
      if (packet.retain === true && !this.#confirmed) {
        this.#confirmed = true;
        this.#stopChecks();
      }
      return;
    }
    // A live "offline" (a will stored late) or an older retained copy: the broker does not hold our presence.
    if (status.state === 'online' && packet.retain !== true) return; // an older online echoed late: harmless
    this.#o.logger.info('the broker holds a stale status for this device; announcing online again', {
      state: status.state,
      ts: status.ts,
      retained: packet.retain === true,
    });
    const ts = this.#o.publishOnline();
    if (ts !== undefined) this.published(ts);
  }

  #schedule(): void {
    this.#stopChecks();
    const wait = Math.min(this.#o.maxCheckMs, this.#o.firstCheckMs * 2 ** this.#checks);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#confirmed || this.#published === undefined) return;
      this.#checks++;
      if (this.#o.readRetained()) this.#schedule();
    }, wait);
    this.#timer.unref?.();
  }

  #stopChecks(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
