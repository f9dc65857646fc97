// Errors from the engine carry a stable `code`; messages name the MNN call and the file involved.
import { codedError } from '../../lib/errors.js';

export type EngineErrorCode =
  | 'ENOENGINE'
  | 'ENOENT'
  | 'EINVAL'
  | 'EMEDIA'
  | 'EBACKEND'
  | 'ELOAD'
  | 'EENGINE'
  | 'EBUSY'
  | 'ESTATE'
  | 'EDISPOSED'
  | 'ENOTSUP'
  | 'ERANGE'
  | 'EABORT'
  | 'EHOSTEXIT'
  | 'ETIMEDOUT';

export class EngineError extends codedError<EngineErrorCode>('EngineError') {}

/** Native errors arrive as plain Errors with `code`; this gives them the engine's class without changing text. */
export function fromNative(err: unknown): EngineError {
  if (err instanceof EngineError) return err;
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return new EngineError(
      typeof code === 'string' ? (code as EngineErrorCode) : 'EENGINE',
      err.message,
      undefined,
      {
        cause: err,
      },
    );
  }
  return new EngineError('EENGINE', String(err));
}
