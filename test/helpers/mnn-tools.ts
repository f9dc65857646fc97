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
