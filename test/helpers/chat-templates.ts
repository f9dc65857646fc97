// The chat templates of real model families (test/fixtures/chat-templates, README.md names their source), as
// MNN's export carries them: the Jinja text with the tokenizer's bos and eos.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelChatTemplate } from '../../agent/workloads/shared/template/model-template.js';
import { repoRoot } from './paths.js';

export const FAMILY_TEMPLATES = {
  'qwen2.5': { file: 'Qwen-Qwen2.5-7B-Instruct.jinja', bos: '', eos: '<|im_end|>' },
  qwen3: { file: 'Qwen-Qwen3-0.6B.jinja', bos: '', eos: '<|im_end|>' },
  'qwen3-coder': { file: 'Qwen3-Coder.jinja', bos: '', eos: '<|im_end|>' },
  'llama3.2': { file: 'meta-llama-Llama-3.2-3B-Instruct.jinja', bos: '<|begin_of_text|>', eos: '<|eot_id|>' },
  mistral: { file: 'mistralai-Mistral-Nemo-Instruct-2407.jinja', bos: '<s>', eos: '</s>' },
  hermes3: {
    file: 'NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja',
    bos: '<|begin_of_text|>',
    eos: '<|im_end|>',
  },
} as const;

export type Family = keyof typeof FAMILY_TEMPLATES;

export function familyTemplate(family: Family): ModelChatTemplate {
  const f = FAMILY_TEMPLATES[family];
  return {
    source: readFileSync(join(repoRoot, 'test/fixtures/chat-templates', f.file), 'utf8'),
    bos: f.bos,
    eos: f.eos,
    context: {},
  };
}
