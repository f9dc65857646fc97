// Errors a workload caller can act on, each with a stable code: bad audio or frames are the caller's fault
// (EAUDIO, EFRAME), a missing engine or model is the device's (ENOENGINE, ENOMODEL), a full queue is load (EBUSY).
import { codedError } from '../../../lib/errors.js';

export type WorkloadErrorCode =
  | 'EAUDIO'
  | 'EFRAME'
  | 'ENOENGINE'
  | 'ENOMODEL'
  | 'EBUSY'
  | 'ETOOLARGE'
  | 'ESTATE'
  | 'ETOOL'
  | 'ECANCELLED';

export class WorkloadError extends codedError<WorkloadErrorCode>('WorkloadError') {}

export function isAbort(err: unknown): boolean {
  return (
    (err instanceof Error && (err.name === 'AbortError' || (err as { code?: unknown }).code === 'EABORT')) ||
    (err instanceof WorkloadError && err.code === 'ECANCELLED')
  );
}
