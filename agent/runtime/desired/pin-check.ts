import { MnnEdgeError } from '../../../lib/errors.js';
import { pinOptions } from '../../plan/pin-options.js';
import { BACKEND_TYPES, type PlanBoard, type SlotName } from '../../plan/types.js';

// A pin names a backend in this board's words: an unknown name is answered with what this board offers, and a
// backend whose evidence chain failed (no device, loader missing, init probe failed) is refused with that step,
// before anything is written, so a refused pin changes nothing.

/** Backends a pin may name here: usable ones first, then those the board knows but cannot use (with why), from
 *  the same list the dashboard's pin form offers. */
export function pinnableBackends(board: PlanBoard): { usable: string[]; unusable: string[] } {
  const options = pinOptions(board);
  const known = new Set<string>(board.backends.map((b) => b.backend));
  return {
    usable: options.filter((o) => o.usable).map((o) => o.backend),
    unusable: options
      .filter((o) => !o.usable && known.has(o.backend))
      .map((o) => `${o.backend} (${o.reason})`),
  };
}

/** Throws EINVAL for an unknown backend (naming this board's values) and EBACKEND for one whose chain failed. */
export function assertPinBackend(slot: SlotName, value: unknown, board: PlanBoard): void {
  if (value === null || typeof value !== 'object') return;
  const backend = (value as { backend?: unknown }).backend;
  if (backend === undefined) return;
  const { usable, unusable } = pinnableBackends(board);
  const known = typeof backend === 'string' && (BACKEND_TYPES as readonly string[]).includes(backend);
  if (!known)
    throw new MnnEdgeError(
      'EINVAL',
      `Unknown backend_type ${JSON.stringify(backend)} in the pin for ${slot}: this board allows ${usable.join(', ')}` +
        (unusable.length ? `; known but unusable here: ${unusable.join('; ')}` : ''),
      { allowed: usable },
    );
  const entry = board.backends.find((b) => b.backend === backend);
  if (entry && !entry.available && entry.failedStep)
    throw new MnnEdgeError(
      'EBACKEND',
      `Pin of ${slot} to ${backend} refused: its ${entry.failedStep.step} step failed: ${entry.failedStep.detail}. Nothing was changed`,
      { step: entry.failedStep.step },
    );
}
