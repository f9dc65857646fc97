import { HttpError } from '../../lib/http-error.js';

// Query-string parameters, validated with messages that name the parameter and the accepted range.

export function intParam(
  url: URL,
  name: string,
  range: { min: number; max: number; fallback: number },
): number {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === '') return range.fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw new HttpError(
      400,
      'invalid_parameter',
      `Query parameter ${name} must be an integer from ${range.min} to ${range.max}, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

export function listParam(url: URL, name: string): string[] {
  const raw = url.searchParams.get(name);
  if (raw === null || raw.trim() === '') {
    throw new HttpError(400, 'invalid_parameter', `Query parameter ${name} is required (comma-separated)`);
  }
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
