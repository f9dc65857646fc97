import { badRequest } from './errors.js';

// Ollama's `keep_alive`: how long the model stays loaded after a request. A number is seconds, a string is a
// Go duration ("5m", "1h30m", "300ms", "-1s"); any negative value means "keep it loaded", 0 "unload it once
// this request is answered". Numbers written as strings ("300") are taken as seconds too, as Ollama's CLI does.

export type KeepAlive = { kind: 'forever' } | { kind: 'for'; ms: number };

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  '\u03bcs': 1e-3,
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

/** The longest stay a timer can hold (setTimeout's limit, about 24.8 days); longer reads as "keep it loaded". */
const MAX_TIMER_MS = 2 ** 31 - 1;

function fromMs(ms: number): KeepAlive {
  if (ms < 0 || ms > MAX_TIMER_MS) return { kind: 'forever' };
  return { kind: 'for', ms: Math.round(ms) };
}

/** Go's time.ParseDuration grammar: an optional sign, then one or more decimal numbers each with a unit. */
function parseGoDuration(text: string): number | undefined {
  const m = /^([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|\u03bcs|ms|s|m|h))+$/.exec(text);
  if (!m) return text === '0' || text === '+0' || text === '-0' ? 0 : undefined;
  let total = 0;
  for (const part of text.slice(m[1]!.length).matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|\u03bcs|ms|s|m|h)/g))
    total += Number(part[1]) * UNIT_MS[part[2]!]!;
  return m[1] === '-' ? -total : total;
}

/** The request's keep_alive, or undefined when it sent none (the board's default applies). */
export function parseKeepAlive(value: unknown): KeepAlive | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw badRequest('keep_alive must be a finite number of seconds');
    return fromMs(value * 1_000);
  }
  if (typeof value === 'string') {
    const text = value.trim();
    if (/^[+-]?\d+(\.\d+)?$/.test(text) && text !== '0') return fromMs(Number(text) * 1_000);
    const ms = parseGoDuration(text);
    if (ms === undefined)
      throw badRequest(
        `keep_alive ${JSON.stringify(value)} is not a duration: use seconds (300), a duration ("5m", "1h30m"), 0 to unload or -1 to keep the model loaded`,
      );
    return fromMs(ms);
  }
  throw badRequest('keep_alive must be a number of seconds or a duration string such as "5m"');
}
