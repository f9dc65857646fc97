// The chat template an MNN export carries: MNN's exporter copies Hugging Face's tokenizer `chat_template` into
// `llm_config.json` → `jinja.chat_template`, with the tokenizer's `bos` and `eos` beside it and, for some models,
// a `context` object of extra template variables. MNN's C++ `apply_chat_template` renders it with an empty tools
// list, so a request with tools is rendered here instead (render.ts) and handed to the engine as raw text.
import { readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';

export interface ModelChatTemplate {
  /** The Jinja source, as Hugging Face ships it. */
  source: string;
  /** `bos_token` / `eos_token` as the template reads them ('' when the export wrote none). */
  bos: string;
  eos: string;
  /** `jinja.context`: extra variables MNN hands every render (e.g. Qwen3-ASR's language). */
  context: Record<string, unknown>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function readJson(path: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The template out of an MNN config's merged view (config.json over llm_config.json, as MNN merges them). */
export function templateOfConfig(config: Record<string, unknown>): ModelChatTemplate | undefined {
  const jinja = config['jinja'];
  if (!isObject(jinja) || typeof jinja['chat_template'] !== 'string') return undefined;
  return {
    source: jinja['chat_template'],
    bos: typeof jinja['bos'] === 'string' ? jinja['bos'] : '',
    eos: typeof jinja['eos'] === 'string' ? jinja['eos'] : '',
    context: isObject(jinja['context']) ? { ...jinja['context'] } : {},
  };
}

const cache = new Map<string, { stamp: string; template: ModelChatTemplate | undefined }>();

/**
 * The chat template of the model whose MNN config.json is at `configPath`: MNN reads `llm_config` (default
 * `llm_config.json`, beside config.json) and merges it into the config, so `jinja` may sit in either. Cached
 * per file and modification time; undefined when the export carries no template.
 */
export function readModelTemplate(configPath: string): ModelChatTemplate | undefined {
  const config = readJson(configPath) ?? {};
  const name = typeof config['llm_config'] === 'string' ? config['llm_config'] : 'llm_config.json';
  const llmConfigPath = isAbsolute(name) ? name : join(dirname(configPath), name);
  let stamp: string;
  try {
    stamp = `${statSync(configPath).mtimeMs}:${statSync(llmConfigPath).mtimeMs}`;
  } catch {
    stamp = 'missing';
  }
  const key = `${configPath}\0${llmConfigPath}`;
  const known = cache.get(key);
  if (known && known.stamp === stamp) return known.template;
  const merged = { ...(readJson(llmConfigPath) ?? {}), ...config };
  const fromLlm = readJson(llmConfigPath)?.['jinja'];
  // config.json's own `jinja` wins only where it has one; otherwise llm_config.json's.
  if (!isObject(config['jinja']) && isObject(fromLlm)) merged['jinja'] = fromLlm;
  const template = templateOfConfig(merged);
  cache.set(key, { stamp, template });
  return template;
}
