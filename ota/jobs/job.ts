// What travels over MQTT: a job (operator → device) and the device's report of it (device → operators).
// The job carries the whole signed targets document, so a device needs nothing but the broker and the package
// URL; the URL is not trusted (length and sha256 come from the signed document).

import type { JsonSchema } from '../../lib/schema.js';
import { deviceTopics, FLEET_SEGMENT, TOPIC_PREFIX } from '../../lib/topics.js';
import type { RejectReason } from '../trust/rejection.js';
import type { SignedTargets } from '../trust/targets.js';

/**
 * A job's states, each named for the step that runs while the journal holds it: `queued` checks the signed
 * targets (signatures, version, expiry) before anything is fetched, `downloading` fetches and checks length and
 * sha256, `installing` unpacks, verifies every file against the manifest and installs, `staged` measures the
 * baseline, `activating` swaps, `health-check` runs the gate.
 */
export const JOB_STATES = [
  'queued',
  'downloading',
  'installing',
  'staged',
  'activating',
  'health-check',
  'succeeded',
  'failed',
  'rolled-back',
  'rejected',
] as const;
export type JobState = (typeof JOB_STATES)[number];
export const TERMINAL_STATES: readonly JobState[] = ['succeeded', 'failed', 'rolled-back', 'rejected'];

export function isTerminal(state: JobState): boolean {
  return TERMINAL_STATES.includes(state);
}

/**
 * The install step was called `verifying` until issue 44, and on the wire it still is: a device reports
 * `installing` as `verifying` in its status, because operator tools before that change hold a status with a
 * state they do not know for malformed, and a rollout counts a malformed status as a failed device. A reader
 * accepts both (jobStatusSchema), so that once no such tool is left a device can send `installing` as it is.
 * The journal (SQLite) stores the new name; migration 48 rewrote the rows written before.
 */
export const WIRE_JOB_STATES = [...JOB_STATES, 'verifying'] as const;
export type WireJobState = (typeof WIRE_JOB_STATES)[number];

/** A state as a device's status reports it (see WIRE_JOB_STATES). */
export function jobStateOnWire(state: JobState): WireJobState {
  return state === 'installing' ? 'verifying' : state;
}

/** A state as a status reports it, in the journal's words. */
export function jobStateFromWire(state: WireJobState): JobState {
  return state === 'verifying' ? 'installing' : state;
}

export interface OtaJob {
  jobId: string;
  package: { id: string; version: string; variant?: string };
  targets: SignedTargets;
  /** Artifact names from the targets are resolved against this http(s) URL. */
  baseUrl: string;
  rolloutId?: string;
}

export type FailureReason = 'download' | 'disk-space' | 'install' | 'activation' | 'error';
export type RollbackReason = 'health-gate' | 'load-failed' | 'crashed' | 'activation-failed';

export interface HealthNumbers {
  ttftMs: number;
  decodeTokensPerSecond: number;
  /** The previous version's decode rate the gate compared against, when there was one. */
  baselineDecodeTokensPerSecond?: number;
  maxTtftMs: number;
  minDecodeRatio: number;
}

export interface JobStatus {
  jobId: string;
  deviceId: string;
  state: JobState;
  package: { id: string; version: string };
  rolloutId?: string;
  bytesDone?: number;
  bytesTotal?: number;
  reason?: RejectReason | FailureReason | RollbackReason;
  message?: string;
  previousVersion?: string;
  health?: HealthNumbers;
  /** 'root' for a root rotation's status (package then names the root version); absent for package jobs. */
  kind?: 'root';
  /** Epoch ms by the device's trusted time. */
  ts: number;
}

const JOB_ID = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';

export const otaJobSchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://mnn-edge.dev/schemas/ota-job.json',
  title: 'mnn-edge OTA job (published to mnn-edge/<device>/ota/jobs or mnn-edge/fleet/ota/tags/<tag>/jobs)',
  type: 'object',
  additionalProperties: false,
  required: ['jobId', 'package', 'targets', 'baseUrl'],
  properties: {
    jobId: { type: 'string', pattern: JOB_ID },
    package: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'version'],
      properties: {
        id: { type: 'string', minLength: 1, maxLength: 128 },
        version: { type: 'string', minLength: 1, maxLength: 128 },
        variant: { type: 'string', minLength: 1, maxLength: 128 },
      },
    },
    targets: { type: 'object', description: 'The signed targets envelope (ota-signed-targets.json).' },
    baseUrl: { type: 'string', pattern: '^https?://' },
    rolloutId: { type: 'string', pattern: JOB_ID },
  },
};

export const jobStatusSchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://mnn-edge.dev/schemas/ota-status.json',
  title: 'mnn-edge OTA job status (retained on mnn-edge/<device>/ota/status)',
  type: 'object',
  required: ['jobId', 'deviceId', 'state', 'package', 'ts'],
  properties: {
    jobId: { type: 'string' },
    deviceId: { type: 'string' },
    state: {
      enum: WIRE_JOB_STATES,
      description:
        'Devices report the install step (unpack, verify the files against the manifest, install) as `verifying`, its name before `installing`; readers take either for that step.',
    },
    package: {
      type: 'object',
      required: ['id', 'version'],
      properties: { id: { type: 'string' }, version: { type: 'string' } },
    },
    rolloutId: { type: 'string' },
    bytesDone: { type: 'integer', minimum: 0 },
    bytesTotal: { type: 'integer', minimum: 0 },
    reason: { type: 'string' },
    message: { type: 'string' },
    previousVersion: { type: 'string' },
    health: { type: 'object' },
    kind: { const: 'root' },
    ts: { type: 'integer' },
  },
};

export const otaTopics = {
  deviceJobs: (deviceId: string) => deviceTopics(deviceId).ota('jobs'),
  deviceStatus: (deviceId: string) => deviceTopics(deviceId).ota('status'),
  tagJobs: (tag: string) => `${TOPIC_PREFIX}/${FLEET_SEGMENT}/ota/tags/${tag}/jobs`,
  /** Root rotations travel apart from jobs: each topic's retained message is then the newest of its kind. */
  deviceRoot: (deviceId: string) => deviceTopics(deviceId).ota('root'),
  tagRoot: (tag: string) => `${TOPIC_PREFIX}/${FLEET_SEGMENT}/ota/tags/${tag}/root`,
  allStatus: `${TOPIC_PREFIX}/+/ota/status`,
};
