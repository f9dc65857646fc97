// Text from documents, servers and archives ends up in terminal output and logs. Control characters in it
// could move the cursor, rewrite earlier lines or hide part of a message, so they are shown escaped instead.

import { INPUT_LIMITS } from './input-limits.js';

// C0 controls, DEL, C1 controls, and the Unicode bidirectional overrides that reorder what a terminal shows.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's job.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

function escapeChar(c: string): string {
  const code = c.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * The text with every control character escaped (\x1b, \u202e …), newlines and tabs too unless `keepLines`
 * (for our own multi-line messages, whose quoted parts were escaped when they were quoted).
 */
export function escapeControl(text: string, keepLines = false): string {
  return text.replace(UNSAFE, (c) => (keepLines && (c === '\n' || c === '\t') ? c : escapeChar(c)));
}

/** Escaped and cut to `max` characters: for quoting something an attacker may have chosen. */
export function quoteUntrusted(text: string, max: number = INPUT_LIMITS.quotedTextMaxChars): string {
  const cut = text.length > max ? `${text.slice(0, max - 3)}...` : text;
  return escapeControl(cut);
}
