// Secrets never leave the device in the clear: the CLI's `config`, the Settings page and the fleet's retained
// `config` document all mask them the same way. A value that is a file path (a key file) is shown: it is not the
// secret itself.

const SECRET_KEYS = new Set(['password', 'key', 'token', 'secret', 'metricsToken']);

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
      SECRET_KEYS.has(k) && typeof v === 'string' && !v.startsWith('/') ? '***' : redactConfig(v),
    ]),
  );
}
