// Device side of the OTA topics: jobs arrive on mnn-edge/<device>/ota/jobs (and on the fleet topic of each of
// the device's tags), root rotations on …/ota/root; statuses go out retained on mnn-edge/<device>/ota/status so
// an operator that connects later still sees where every device stands. The transport may be offline at any
// time: the subscriptions are owned by the fleet's registry (restored on every connection), and a status that
// could not be sent is sent when the connection is back.

import { errorMessage, MnnEdgeError } from '../../lib/errors.js';
import { parseJsonInput } from '../../lib/json-input.js';
import type { Logger } from '../../lib/log.js';
import type { RootStore } from '../trust/root-store.js';
import { type JobStatus, jobStateOnWire, otaTopics } from './job.js';
import type { JobRunner } from './job-runner.js';
import { applyRootJob } from './root-job.js';

/** How often a device subscribes to its OTA topics again while connected (±50 %). */
export const OTA_TOPIC_REFRESH_MS = 5 * 60_000;

type MessageHandler = (topic: string, payload: Buffer, packet?: { retain?: boolean }) => void;

/** What OTA needs from an MQTT connection that comes and goes. */
export interface OtaTransport {
  /**
   * Routes these filters' messages to `handler` on every connection from now on, subscribed at `qos`; returns
   * the remover.
   */
  subscribe(
    filters: readonly string[],
    handler: MessageHandler,
    qos: 0 | 1,
    /** Subscribe again this often while connected, so the retained messages come again. */
    refresh?: { everyMs: number },
  ): () => void;
  /** QoS 1; rejects when not connected. */
  publish(topic: string, payload: string, opts: { qos: 1; retain: boolean }): Promise<void>;
  /** Called after every (re)connection; returns the remover. */
  onConnected(listener: () => void): () => void;
}

/** The part of an MQTT.js client `clientTransport` uses. */
export interface OtaMqttClient {
  subscribeAsync(topic: string[], opts: { qos: 0 | 1 }): Promise<unknown>;
  unsubscribeAsync(topic: string[]): Promise<unknown>;
  publishAsync(topic: string, message: string, opts: { qos: 1; retain: boolean }): Promise<unknown>;
  on(event: 'message', cb: MessageHandler): unknown;
  removeListener(event: 'message', cb: MessageHandler): unknown;
}

/**
 * A transport over one plain, already connected client (operator tools, tests). It subscribes once: the agent
 * itself uses the fleet's transport, which restores subscriptions after reconnects.
 */
export function clientTransport(client: OtaMqttClient, logger?: Logger): OtaTransport {
  return {
    subscribe(filters, handler, qos) {
      const list = [...filters];
      const onMessage: MessageHandler = (topic, payload, packet) => {
        if (list.includes(topic)) handler(topic, payload, packet);
      };
      client.on('message', onMessage);
      client.subscribeAsync(list, { qos }).catch((err: unknown) => {
        logger?.warn('ota: subscribe failed', { filters: list, error: errorMessage(err) });
      });
      return () => {
        client.removeListener('message', onMessage);
        client.unsubscribeAsync(list).catch(() => undefined);
      };
    },
    async publish(topic, payload, opts) {
      await client.publishAsync(topic, payload, opts);
    },
    onConnected() {
      return () => {};
    },
  };
}

export interface OtaDeviceLink {
  detach(): Promise<void>;
}

export function attachOtaToMqtt(
  transport: OtaTransport,
  runner: JobRunner,
  identity: { deviceId: string; tags: readonly string[] },
  logger: Logger,
  roots?: { store: RootStore; now: () => number },
): OtaDeviceLink {
  const jobTopics = [
    otaTopics.deviceJobs(identity.deviceId),
    ...identity.tags.map((t) => otaTopics.tagJobs(t)),
  ];
  const rootTopics = roots
    ? [otaTopics.deviceRoot(identity.deviceId), ...identity.tags.map((t) => otaTopics.tagRoot(t))]
    : [];
  const statusTopic = otaTopics.deviceStatus(identity.deviceId);
  // The status is retained: only the newest matters, and it is sent again if it could not be sent.
  let unsent: string | undefined;
  const send = (payload: string) => {
    unsent = payload;
    transport.publish(statusTopic, payload, { qos: 1, retain: true }).then(
      () => {
        if (unsent === payload) unsent = undefined;
      },
      (err: unknown) => {
        logger.debug('ota status not published yet', { error: errorMessage(err) });
      },
    );
  };
  // In the wire's words: the install step goes out as `verifying` (WIRE_JOB_STATES says why).
  const publishStatus = (status: JobStatus) =>
    send(JSON.stringify({ ...status, state: jobStateOnWire(status.state) }));
  const onMessage: MessageHandler = (topic, payload, packet) => {
    if (payload.length === 0) return; // a cleared retained job
    let message: unknown;
    try {
      message = parseJsonInput(payload, `OTA message on ${topic}`);
    } catch (err) {
      logger.warn('ota message refused', {
        topic,
        code: err instanceof MnnEdgeError ? err.code : undefined,
        error: errorMessage(err),
      });
      return;
    }
    if (roots && rootTopics.includes(topic)) {
      const status = applyRootJob(
        message,
        roots.store,
        identity.deviceId,
        roots.now(),
        packet?.retain === true,
      );
      if (status) {
        logger.info('ota root rotation', {
          jobId: status.jobId,
          state: status.state,
          message: status.message,
        });
        publishStatus(status);
      }
      return;
    }
    runner.submit(message);
  };
  // QoS 0: every job and root rotation is retained, and the broker sends the retained copy with every
  // SUBSCRIBE, which the transport repeats after every connection. A job published while the device was away
  // (or lost in flight with a dying connection) reaches it when it is back; only the newest one per topic,
  // which is all a job topic means. On NATS this keeps the OTA filters off JetStream (no consumer per filter).
  // A delivery lost on a live connection (a NATS route that dropped) comes again with the periodic SUBSCRIBE;
  // the runner answers a job it knows with its status again, which heals a status the operator missed too.
  const removeSubscription = transport.subscribe([...jobTopics, ...rootTopics], onMessage, 0, {
    everyMs: OTA_TOPIC_REFRESH_MS,
  });
  const offConnected = transport.onConnected(() => {
    if (unsent !== undefined) send(unsent);
  });
  const offStatus = runner.on('status', publishStatus);
  return {
    async detach() {
      offStatus();
      offConnected();
      removeSubscription();
    },
  };
}
