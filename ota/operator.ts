// Operator-side MQTT: publishing jobs, reading the devices' retained OTA statuses, and driving a rollout
// controller from them. Runs wherever the broker is reachable (beside it, or on a laptop).

import { connectAsync, type MqttClient } from 'mqtt';
import { parseJsonInput } from '../agent/common/json-input.js';
import { validate } from '../agent/common/schema.js';
import { type JobStatus, jobStatusSchema, type OtaJob, otaTopics } from './job.js';
import type { RolloutController, RolloutView } from './rollout.js';
import type { RootRotationJob } from './root-job.js';

export interface OperatorBroker {
  url: string;
  username?: string;
  password?: string;
}

export async function connectOperator(broker: OperatorBroker): Promise<MqttClient> {
  return connectAsync(broker.url, {
    protocolVersion: 5,
    clientId: `mnn-edge-ota-${process.pid}-${Date.now().toString(36)}`,
    clean: true,
    connectTimeout: 10_000,
    reconnectPeriod: 1000,
    ...(broker.username !== undefined ? { username: broker.username } : {}),
    ...(broker.password !== undefined ? { password: broker.password } : {}),
  });
}

export type JobAddress = { device: string } | { tag: string };

/** Retained, so a device that is offline now picks the job up when it reconnects; jobs are idempotent by id. */
export async function publishJob(
  client: Pick<MqttClient, 'publishAsync'>,
  to: JobAddress,
  job: OtaJob,
): Promise<void> {
  const topic = 'device' in to ? otaTopics.deviceJobs(to.device) : otaTopics.tagJobs(to.tag);
  await client.publishAsync(topic, JSON.stringify(job), { qos: 1, retain: true });
}

/** A root rotation, retained on the root topic: a device that connects later still receives the newest root. */
export async function publishRootRotation(
  client: Pick<MqttClient, 'publishAsync'>,
  to: JobAddress,
  job: RootRotationJob,
): Promise<void> {
  const topic = 'device' in to ? otaTopics.deviceRoot(to.device) : otaTopics.tagRoot(to.tag);
  await client.publishAsync(topic, JSON.stringify(job), { qos: 1, retain: true });
}

export function parseStatus(payload: Buffer): JobStatus | undefined {
  if (payload.length === 0) return undefined;
  try {
    const v: unknown = parseJsonInput(payload, 'OTA status');
    return validate(jobStatusSchema, v).length === 0 ? (v as JobStatus) : undefined;
  } catch {
    return undefined;
  }
}

/** Calls `onStatus` for every device status report (the retained ones first). Returns an unsubscribe. */
export async function watchStatuses(
  client: MqttClient,
  onStatus: (status: JobStatus) => void,
): Promise<() => Promise<void>> {
  const handler = (topic: string, payload: Buffer) => {
    if (!/^mnn-edge\/[^/]+\/ota\/status$/.test(topic)) return;
    const s = parseStatus(payload);
    if (s) onStatus(s);
  };
  client.on('message', handler);
  await client.subscribeAsync(otaTopics.allStatus, { qos: 1 });
  return async () => {
    client.removeListener('message', handler);
    await client.unsubscribeAsync(otaTopics.allStatus);
  };
}

/** The latest status of every device, as retained on the broker, gathered for `settleMs`. */
export async function collectStatuses(client: MqttClient, settleMs = 1000): Promise<Map<string, JobStatus>> {
  const latest = new Map<string, JobStatus>();
  const stop = await watchStatuses(client, (s) => latest.set(s.deviceId, s));
  await new Promise((r) => setTimeout(r, settleMs));
  await stop();
  return latest;
}

/**
 * Runs a rollout until it completes or stops: every status report advances the controller, which sends the
 * next phase's jobs. Resolves with the final view.
 */
export async function driveRollout(
  client: MqttClient,
  controller: RolloutController,
  rolloutId: string,
  onChange: (view: RolloutView) => void = () => {},
  signal?: AbortSignal,
): Promise<RolloutView> {
  let view = await controller.advance(rolloutId, { resendUnanswered: true });
  onChange(view);
  if (view.state !== 'running') return view;
  let chain = Promise.resolve();
  return new Promise<RolloutView>((resolve, reject) => {
    let stopWatching: (() => Promise<void>) | undefined;
    const finish = (v: RolloutView) => {
      signal?.removeEventListener('abort', onAbort);
      void stopWatching?.().finally(() => resolve(v));
    };
    const onAbort = () => finish(view);
    signal?.addEventListener('abort', onAbort, { once: true });
    watchStatuses(client, (status) => {
      if (status.rolloutId !== rolloutId) return;
      // Serialised: each advance sees the previous one's writes.
      chain = chain.then(async () => {
        if (!controller.observe(status)) return;
        view = await controller.advance(rolloutId);
        onChange(view);
        if (view.state !== 'running') finish(view);
      });
      chain.catch(reject);
    }).then((stop) => {
      stopWatching = stop;
    }, reject);
  });
}
