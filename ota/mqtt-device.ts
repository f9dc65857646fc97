// Device side of the OTA topics: jobs arrive on mnn-edge/<device>/ota/jobs (and on the fleet topic of each of
// the device's tags), statuses go out retained on mnn-edge/<device>/ota/status so an operator that connects
// later still sees where every device stands.

import type { Logger } from '../agent/common/log.js';
import { otaTopics } from './job.js';
import type { JobRunner } from './job-runner.js';

/** The part of an MQTT.js client this module uses (the fleet connection's client satisfies it). */
export interface OtaMqttClient {
  subscribeAsync(topic: string[], opts: { qos: 1 }): Promise<unknown>;
  unsubscribeAsync(topic: string[]): Promise<unknown>;
  publishAsync(topic: string, message: string, opts: { qos: 1; retain: boolean }): Promise<unknown>;
  on(event: 'message', cb: (topic: string, payload: Buffer) => void): unknown;
  removeListener(event: 'message', cb: (topic: string, payload: Buffer) => void): unknown;
}

export interface OtaDeviceLink {
  detach(): Promise<void>;
}

export async function attachOtaToMqtt(
  client: OtaMqttClient,
  runner: JobRunner,
  identity: { deviceId: string; tags: readonly string[] },
  logger: Logger,
): Promise<OtaDeviceLink> {
  const topics = [otaTopics.deviceJobs(identity.deviceId), ...identity.tags.map((t) => otaTopics.tagJobs(t))];
  const statusTopic = otaTopics.deviceStatus(identity.deviceId);
  const onMessage = (topic: string, payload: Buffer) => {
    if (!topics.includes(topic) || payload.length === 0) return;
    let job: unknown;
    try {
      job = JSON.parse(payload.toString('utf8'));
    } catch (err) {
      logger.warn('ota job is not JSON', { topic, error: (err as Error).message });
      return;
    }
    runner.submit(job);
  };
  const offStatus = runner.on('status', (status) => {
    client
      .publishAsync(statusTopic, JSON.stringify(status), { qos: 1, retain: true })
      .catch((err: unknown) => {
        // The retained status is republished on the next change; the journal keeps the truth meanwhile.
        logger.warn('ota status not published', { error: (err as Error).message });
      });
  });
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
