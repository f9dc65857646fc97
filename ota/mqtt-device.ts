// Device side of the OTA topics: jobs arrive on mnn-edge/<device>/ota/jobs (and on the fleet topic of each of
// the device's tags), root rotations on …/ota/root; statuses go out retained on mnn-edge/<device>/ota/status so
// an operator that connects later still sees where every device stands.

import { errorMessage, MnnEdgeError } from '../agent/common/errors.js';
import { parseJsonInput } from '../agent/common/json-input.js';
import type { Logger } from '../agent/common/log.js';
import { type JobStatus, otaTopics } from './job.js';
import type { JobRunner } from './job-runner.js';
import { applyRootJob } from './root-job.js';
import type { RootStore } from './root-store.js';

type MessageHandler = (topic: string, payload: Buffer, packet?: { retain?: boolean }) => void;

/** The part of an MQTT.js client this module uses (the fleet connection's client satisfies it). */
export interface OtaMqttClient {
  subscribeAsync(topic: string[], opts: { qos: 1 }): Promise<unknown>;
  unsubscribeAsync(topic: string[]): Promise<unknown>;
  publishAsync(topic: string, message: string, opts: { qos: 1; retain: boolean }): Promise<unknown>;
  on(event: 'message', cb: MessageHandler): unknown;
  removeListener(event: 'message', cb: MessageHandler): unknown;
}

export interface OtaDeviceLink {
  detach(): Promise<void>;
}

export async function attachOtaToMqtt(
  client: OtaMqttClient,
  runner: JobRunner,
  identity: { deviceId: string; tags: readonly string[] },
  logger: Logger,
  roots?: { store: RootStore; now: () => number },
): Promise<OtaDeviceLink> {
  const jobTopics = [
    otaTopics.deviceJobs(identity.deviceId),
    ...identity.tags.map((t) => otaTopics.tagJobs(t)),
  ];
  const rootTopics = roots
    ? [otaTopics.deviceRoot(identity.deviceId), ...identity.tags.map((t) => otaTopics.tagRoot(t))]
    : [];
  const topics = [...jobTopics, ...rootTopics];
  const statusTopic = otaTopics.deviceStatus(identity.deviceId);
  const publishStatus = (status: JobStatus) => {
    client
      .publishAsync(statusTopic, JSON.stringify(status), { qos: 1, retain: true })
      .catch((err: unknown) => {
        // The retained status is republished on the next change; the journal keeps the truth meanwhile.
        logger.warn('ota status not published', { error: errorMessage(err) });
      });
  };
  const onMessage: MessageHandler = (topic, payload, packet) => {
    if (!topics.includes(topic) || payload.length === 0) return;
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
  const offStatus = runner.on('status', publishStatus);
  client.on('message', onMessage);
  await client.subscribeAsync(topics, { qos: 1 });
  return {
    async detach() {
      offStatus();
      client.removeListener('message', onMessage);
      await client.unsubscribeAsync(topics);
    },
  };
}
