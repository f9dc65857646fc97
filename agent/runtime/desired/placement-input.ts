import { HttpError } from '../../../lib/http-error.js';
import { BACKEND_TYPES, type SlotConstraints } from '../../plan/types.js';

// The pin form's body, checked field by field so the page can show exactly which field was wrong.

const MODES = ['low', 'normal', 'high'] as const;
const KEYS = ['version', 'variant', 'backend', 'threads', 'precision', 'memory'] as const;
const TEXT = /^[A-Za-z0-9_.+-]{1,64}$/;

function bad(message: string): HttpError {
  return new HttpError(400, 'invalid_pin', message);
}

export function parsePinBody(body: unknown): SlotConstraints {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw bad('Expected a JSON object with any of: ' + KEYS.join(', '));
  }
  const input = body as Record<string, unknown>;
  const unknownKey = Object.keys(input).find((k) => !(KEYS as readonly string[]).includes(k));
  if (unknownKey !== undefined)
    throw bad(`Unknown pin field ${JSON.stringify(unknownKey)}; allowed: ${KEYS.join(', ')}`);
  const out: SlotConstraints = {};
  for (const key of ['version', 'variant'] as const) {
    const v = input[key];
    if (v === undefined) continue;
    if (typeof v !== 'string' || !TEXT.test(v))
      throw bad(`${key} must be 1-64 characters of A-Z a-z 0-9 _ . + -`);
    out[key] = v;
  }
  // A backend name is checked here for its form only: which ones this board allows is the runtime's to say
  // (Runtime.pin names them in its refusal).
  if (input['backend'] !== undefined) {
    const v = input['backend'];
    if (typeof v !== 'string' || !TEXT.test(v))
      throw bad(`backend must be a backend name (${BACKEND_TYPES.join(', ')})`);
    out.backend = v as SlotConstraints['backend'] & string;
  }
  if (input['threads'] !== undefined) {
    const v = input['threads'];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 64)
      throw bad('threads must be an integer from 1 to 64');
    out.threads = v;
  }
  for (const key of ['precision', 'memory'] as const) {
    const v = input[key];
    if (v === undefined) continue;
    if (typeof v !== 'string' || !(MODES as readonly string[]).includes(v))
      throw bad(`${key} must be one of ${MODES.join(', ')}`);
    out[key] = v as (typeof MODES)[number];
  }
  if (Object.keys(out).length === 0) throw bad('A pin needs at least one field: ' + KEYS.join(', '));
  return out;
}
