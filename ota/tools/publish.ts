// Operator-side MQTT: publishing jobs, reading the devices' retained OTA statuses, and driving a rollout
// controller from them. Runs wherever the broker is reachable (beside it, or on a laptop).

import { parseJsonInput } from '../../lib/json-input.js';
import { OPERATOR_QOS, OperatorLink } from '../../lib/mqtt/operator-link.js';
import { validate } from '../../lib/schema.js';
import { deviceIdOf, fleetTopics } from '../../lib/topics.js';
import {
  type JobStatus,
  jobStateFromWire,
  jobStatusSchema,
  type OtaJob,
  otaTopics,
  type WireJobState,
} from '../jobs/job.js';
import type { RootRotationJob } from '../jobs/root-job.js';
import type { RolloutController, RolloutView } from './rollout.js';

export interface OperatorBroker {
  /** One broker, or the nodes of a cluster: a lost node moves the tool to the next one. */
  url: string | readonly string[];
  /** Left out: MQTT 5, falling back to 3.1.1 on a broker that refuses 5. */
  protocolVersion?: 4 | 5;
  username?: string;
  password?: string;
  onNotice?: (line: string) => void;
}

/** What the OTA operator tools need of a broker connection (an OperatorLink, or a stand-in in tests). */
export type OtaBus = Pick<OperatorLink, 'publish' | 'subscribe' | 'unsubscribe' | 'onMessage' | 'close'>;

export async function connectOperator(broker: OperatorBroker): Promise<OperatorLink> {
  return OperatorLink.connect({
    urls: typeof broker.url === 'string' ? [broker.url] : broker.url,
    ...(broker.protocolVersion !== undefined ? { protocolVersion: broker.protocolVersion } : {}),
    clientId: `mnn-edge-ota-${process.pid}-${Date.now().toString(36)}`,
    connectTimeoutMs: 10_000,
    ...(broker.username !== undefined ? { username: broker.username } : {}),
    ...(broker.password !== undefined ? { password: broker.password } : {}),
    ...(broker.onNotice ? { onNotice: broker.onNotice } : {}),
  });
}

export type JobAddress = { device: string } | { tag: string };

/** Retained, so a device that is offline now picks the job up when it reconnects; jobs are idempotent by id. */
export async function publishJob(
  client: Pick<OtaBus, 'publish'>,
  to: JobAddress,
  job: OtaJob,
): Promise<void> {
  const topic = 'device' in to ? otaTopics.deviceJobs(to.device) : otaTopics.tagJobs(to.tag);
  await client.publish(topic, JSON.stringify(job), { qos: 1, retain: true });
}

/** A root rotation, retained on the root topic: a device that connects later still receives the newest root. */
export async function publishRootRotation(
  client: Pick<OtaBus, 'publish'>,
  to: JobAddress,
  job: RootRotationJob,
): Promise<void> {
  const topic = 'device' in to ? otaTopics.deviceRoot(to.device) : otaTopics.tagRoot(to.tag);
  await client.publish(topic, JSON.stringify(job), { qos: 1, retain: true });
}

export function parseStatus(payload: Buffer): JobStatus | undefined {
  if (payload.length === 0) return undefined;
  try {
    const v: unknown = parseJsonInput(payload, 'OTA status');
    if (validate(jobStatusSchema, v).length > 0) return undefined;
    // A device names the install step `verifying` on the wire (WIRE_JOB_STATES); the tools use the journal's words.
    const status = v as Omit<JobStatus, 'state'> & { state: WireJobState };
    return { ...status, state: jobStateFromWire(status.state) };
  } catch {
    return undefined;
  }
}

/** Calls `onStatus` for every device status report (the retained ones first). Returns an unsubscribe. */
export async function watchStatuses(
  client: OtaBus,
  onStatus: (status: JobStatus) => void,
  onMalformed?: (deviceId: string, why: string) => void,
): Promise<() => Promise<void>> {
  const off = client.onMessage((topic, payload) => {
    const m = /^mnn-edge\/([^/]+)\/ota\/status$/.exec(topic);
    if (!m) return;
    const s = parseStatus(payload);
    if (s) onStatus(s);
    else if (payload.length > 0) onMalformed?.(deviceIdOf(topic) ?? m[1]!, malformedWhy(payload));
  });
  await client.subscribe([otaTopics.allStatus], OPERATOR_QOS);
  return async () => {
    off();
    await client.unsubscribe([otaTopics.allStatus]);
  };
}

/** Why a device's status report was not understood, quoted safely for a terminal. */
function malformedWhy(payload: Buffer): string {
  try {
    const v: unknown = parseJsonInput(payload, 'OTA status');
    const errors = validate(jobStatusSchema, v);
    return `malformed status: ${errors
      .slice(0, 3)
      .map((e) => `${e.path || '/'} ${e.message}`)
      .join('; ')}`;
  } catch (err) {
    return `malformed status: ${JSON.stringify((err as Error).message)
      .slice(1, -1)
      .slice(0, 200)}`;
  }
}

/** The latest status of every device, as retained on the broker, gathered for `settleMs`. */
export async function collectStatuses(client: OtaBus, settleMs = 1000): Promise<Map<string, JobStatus>> {
  const latest = new Map<string, JobStatus>();
  const stop = await watchStatuses(client, (s) => latest.set(s.deviceId, s));
  await new Promise((r) => setTimeout(r, settleMs));
  await stop();
  return latest;
}

export interface DriveOptions {
  /** How often the controller looks at the clock (timeouts, retries, the rate) and at what arrived. */
  tickMs?: number;
  signal?: AbortSignal;
  /**
   * Jobs no device status answered yet go out again this often (same job id: a device that has it answers with
   * its status and never runs it twice). A broker can lose one: a NATS node whose retained-message stream is
   * electing a leader acknowledges a retained job it did not keep, and a board moving between nodes then never
   * sees it (seen: two of twelve boards' jobs after a node kill, the rollout timed out after 5 minutes).
   */
  resendUnansweredMs?: number;
}

const RESEND_UNANSWERED_MS = 30_000;

/** The tags a retained presence message announces, for dynamic membership; undefined when not online. */
function onlineTags(payload: Buffer): string[] | undefined {
  try {
    const v = parseJsonInput(payload, 'status') as { state?: unknown; tags?: unknown };
    if (v.state !== 'online' || !Array.isArray(v.tags)) return undefined;
    return v.tags.filter((t): t is string => typeof t === 'string');
  } catch {
    return undefined;
  }
}

/**
 * Runs a rollout until it completes or stops: status reports are recorded as they arrive (a malformed one
 * fails its device, with why), and the controller advances on a short tick, so a thousand devices' reports
 * cost one pass over the rollout per tick rather than one per report, and timeouts, retries and the rate limit
 * move on even when nothing arrives. A following rollout also takes in devices that announce its tag.
 */
export async function driveRollout(
  client: OtaBus,
  controller: RolloutController,
  rolloutId: string,
  onChange: (view: RolloutView) => void = () => {},
  options: DriveOptions = {},
): Promise<RolloutView> {
  let view = await controller.advance(rolloutId, { resendUnanswered: true });
  onChange(view);
  if (view.state !== 'running') return view;
  const follow = view.spec.follow;
  let dirty = false;
  const stopStatuses = await watchStatuses(
    client,
    (status) => {
      if (status.rolloutId === rolloutId && controller.observe(status)) dirty = true;
    },
    (deviceId, why) => {
      if (controller.observeMalformed(rolloutId, deviceId, why)) dirty = true;
    },
  );
  let stopFollowing = async () => {};
  if (follow) {
    const off = client.onMessage((topic, payload) => {
      const id = deviceIdOf(topic);
      if (id === undefined || !topic.endsWith('/status') || topic.includes('/ota/')) return;
      if (onlineTags(payload)?.includes(follow.tag) && controller.join(rolloutId, id)) dirty = true;
    });
    await client.subscribe([fleetTopics.allStatus], OPERATOR_QOS);
    stopFollowing = async () => {
      off();
      await client.unsubscribe([fleetTopics.allStatus]);
    };
  }
  const tickMs = options.tickMs ?? 250;
  const resendMs = options.resendUnansweredMs ?? RESEND_UNANSWERED_MS;
  let lastAdvance = Date.now();
  let lastResend = Date.now();
  try {
    while (!options.signal?.aborted) {
      await new Promise((r) => setTimeout(r, tickMs));
      // Reports arrived, or a second passed (a timeout, a retry or the next minute's rate may be due).
      if (!dirty && Date.now() - lastAdvance < 1_000) continue;
      dirty = false;
      lastAdvance = Date.now();
      const resendUnanswered = lastAdvance - lastResend >= resendMs;
      if (resendUnanswered) lastResend = lastAdvance;
      view = await controller.advance(rolloutId, { resendUnanswered });
      onChange(view);
      if (view.state !== 'running') break;
    }
  } finally {
    await stopFollowing();
    await stopStatuses();
  }
  return view;
}
