import { BACKEND_TYPES, type PlanBoard } from './types.js';

export interface PinOption {
  backend: string;
  usable: boolean;
  /** Why it can or cannot be used here, as detection found it. */
  reason: string;
}

/**
 * What a pin may name on this board: every engine backend, usable ones first, the others with the reason
 * detection gave. The dashboard's dropdown shows it, and a refused pin (agent/runtime/pin-check.ts) quotes it.
 * Metal is left out: it exists only on Apple hardware.
 */
export function pinOptions(board: Pick<PlanBoard, 'backends'> | undefined): PinOption[] {
  const options = BACKEND_TYPES.filter((b) => b !== 'metal').map((backend): PinOption => {
    const found = board?.backends.find((b) => b.backend === backend);
    if (backend === 'cpu') return { backend, usable: true, reason: found?.reason || 'always available' };
    if (!found)
      return {
        backend,
        usable: false,
        reason: board ? 'not found on this board' : 'the board has not been detected yet',
      };
    // The first failing step of its evidence chain is the reason, the same words a refused pin gets.
    return {
      backend,
      usable: found.available,
      reason: !found.available && found.failedStep ? found.failedStep.detail : found.reason,
    };
  });
  return [...options.filter((o) => o.usable), ...options.filter((o) => !o.usable)];
}
