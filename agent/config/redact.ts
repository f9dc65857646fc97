// Secrets never leave the device in the clear: the CLI's `config`, the Settings page and the fleet's retained
// `config` document all mask them the same way. A value that is a file path (a key file) is shown: it is not the
// secret itself.

import { MnnEdgeError } from '../../lib/errors.js';

const SECRET_KEYS = new Set(['password', 'key', 'token', 'secret', 'metricsToken']);

/** What a masked secret reads as. */
export const SECRET_MASK = '***';

export function isSecretKey(path: string): boolean {
  return SECRET_KEYS.has(path.split('.').pop() ?? '');
}

/** The configuration with secrets masked, safe to paste into a bug report. */
export function redactConfig(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactConfig);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      SECRET_KEYS.has(k) && typeof v === 'string' && !v.startsWith('/') ? SECRET_MASK : redactConfig(v),
    ]),
  );
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A change that sends a masked secret back means "keep the one stored". A list edited and saved whole (the
 * MCP servers of voice.tools.mcp, each with a token the Settings page only ever sees masked) comes back with
 * `***` for every token the person did not retype: each is replaced by the token of the entry with the same
 * `name` in `current` (the running configuration), so the page can write tokens without ever reading them.
 * A mask with no such entry to keep from is refused, naming the place, instead of storing `***` as a token.
 */
export function restoreMaskedSecrets(patch: unknown, current: unknown, path = ''): unknown {
  if (Array.isArray(patch)) {
    const before = Array.isArray(current) ? current.filter(isObject) : [];
    return patch.map((item, i) => {
      if (!isObject(item)) return item;
      const same = before.find((b) => typeof item['name'] === 'string' && b['name'] === item['name']);
      return restoreMaskedSecrets(item, same, `${path}[${i}]`);
    });
  }
  if (!isObject(patch)) return patch;
  const here = isObject(current) ? current : {};
  return Object.fromEntries(
    Object.entries(patch).map(([k, v]) => {
      const at = path ? `${path}.${k}` : k;
      if (!(SECRET_KEYS.has(k) && v === SECRET_MASK)) return [k, restoreMaskedSecrets(v, here[k], at)];
      const kept = here[k];
      if (typeof kept !== 'string' || kept === SECRET_MASK)
        throw new MnnEdgeError(
          'EINVAL',
          `${at}: "${SECRET_MASK}" keeps the ${k} already stored, but there is none to keep here (a new or renamed entry); enter the ${k} itself`,
          { key: at },
        );
      return [k, kept];
    }),
  );
}
