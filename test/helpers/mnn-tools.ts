import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** MNN's own llm_demo, as an MNN install lays it out: MNN_LLM_DEMO, then <prefix>/bin for MNN_ROOT and the
 *  standard prefixes. Returns the first candidate when none exists, so a skip message can name it. */
export function llmDemoPath(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env['MNN_LLM_DEMO'];
  if (explicit) return explicit;
  const prefixes = [env['MNN_ROOT'], '/opt/mnn', '/usr/local', '/usr'].filter((p): p is string => Boolean(p));
  const candidates = prefixes.map((p) => join(p, 'bin', 'llm_demo'));
  return candidates.find((c) => existsSync(c)) ?? candidates[0]!;
}

/**
 * Why a test file that needs MNN's llm_demo (and, when asked, mosquitto) cannot run here, or undefined. The
 * caller prints it once as its skip line, so a skipped test always says what to install.
 */
export function llmDemoMissing(path: string, options: { mosquittoBin?: string } = {}): string | undefined {
  const missing: string[] = [];
  if (!existsSync(path))
    missing.push(
      `MNN's llm_demo not found at ${path} (set MNN_ROOT to an MNN install prefix, or MNN_LLM_DEMO to the binary)`,
    );
  if (options.mosquittoBin !== undefined && !existsSync(options.mosquittoBin))
    missing.push(
      `mosquitto not found at ${options.mosquittoBin} (apt install mosquitto, or set MOSQUITTO_BIN)`,
    );
  return missing.length > 0 ? missing.join('; ') : undefined;
}
