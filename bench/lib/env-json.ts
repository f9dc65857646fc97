// A benchmark knob that holds a JSON object (SOAK_AGENT_ENV, BENCH_LLM_OVERRIDES): unset or blank is empty; any
// other JSON, or text that is not JSON, stops the bench with the variable's name rather than running it wrong.

/** The object in environment variable `name`, {} when unset or blank; throws `${name} must be ${what}, got …`. */
export function envJsonObject(name: string, what = 'a JSON object'): Record<string, unknown> {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return {};
  const parsed: unknown = JSON.parse(text);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Error(`${name} must be ${what}, got ${text}`);
  return parsed as Record<string, unknown>;
}
