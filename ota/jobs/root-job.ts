// A root rotation delivered over the fleet: the operator publishes the chain of new roots (retained) to a
// device's or a tag's root topic; the device applies it at once (one SQLite transaction) and answers on its
// status topic like a job, so `ota root rotate --wait` and `ota status` see the outcome.

import { errorMessage } from '../../lib/errors.js';
import { formatSchemaErrors, type JsonSchema, validate } from '../../lib/schema.js';
import { isRejection } from '../trust/rejection.js';
import type { RootStore } from '../trust/root-store.js';
import type { JobStatus } from './job.js';

export interface RootRotationJob {
  jobId: string;
  /** Root documents in ascending version order, ending with the root to trust. */
  roots: unknown[];
}

export const rootRotationJobSchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://mnn-edge.dev/schemas/ota-root-rotation.json',
  title:
    'mnn-edge root rotation (published to mnn-edge/<device>/ota/root or mnn-edge/fleet/ota/tags/<tag>/root)',
  type: 'object',
  additionalProperties: false,
  required: ['jobId', 'roots'],
  properties: {
    jobId: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' },
    roots: {
      type: 'array',
      minItems: 1,
      maxItems: 32,
      items: { type: 'object', description: 'A signed root envelope (ota-signed-root.json).' },
    },
  },
};

/**
 * Applies a rotation and returns the status to report; undefined when there is nothing to say (a retained
 * rotation re-delivered on reconnect that changes nothing).
 */
export function applyRootJob(
  raw: unknown,
  roots: RootStore,
  deviceId: string,
  nowMs: number,
  redelivered: boolean,
): JobStatus | undefined {
  const base = (version: number) => ({
    deviceId,
    kind: 'root' as const,
    package: { id: 'ota-root', version: String(version) },
    ts: nowMs,
  });
  const errors = validate(rootRotationJobSchema, raw);
  if (errors.length > 0) {
    const jobId = (raw as { jobId?: unknown } | null)?.jobId;
    if (typeof jobId !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(jobId)) return undefined;
    return {
      ...base(roots.current().version),
      jobId,
      state: 'rejected',
      reason: 'malformed',
      message: `Invalid root rotation: ${formatSchemaErrors(errors)}`,
    };
  }
  const job = raw as RootRotationJob;
  const before = roots.current().version;
  try {
    const r = roots.rotate(job.roots);
    if (r.alreadyTrusted && redelivered) return undefined;
    return {
      ...base(r.to),
      jobId: job.jobId,
      state: 'succeeded',
      message: r.alreadyTrusted
        ? `root version ${r.to} is already trusted`
        : `root version ${r.from} -> ${r.to}${r.targetsReset ? '; targets keys changed, targets version history reset' : ''}`,
    };
  } catch (err) {
    return {
      ...base(before),
      jobId: job.jobId,
      state: isRejection(err) ? 'rejected' : 'failed',
      reason: isRejection(err) ? err.reason : 'error',
      message: errorMessage(err),
    };
  }
}
