// The scripted tool-call model (engine/tools/tool-model, docs/TOOL-MODEL.md) for tests of the acting assistant: a real
// MNN LLM with Qwen2.5's chat template that answers a chosen tool call when the latest turn is the user's and a chosen
// sentence when it is a tool result. Built on demand into the temp-dir cache (keyed by the generator's inputs).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import {
  cachedToolModel,
  type ToolScript,
  toolModelToolchainMissing,
  toolScript,
} from '../../engine/tools/tool-model/make-tool-model.js';

export interface ToolModel {
  /** The package directory, and its config.json (what Llm.load and the agent's model entries take). */
  dir: string;
  config: string;
  /** llm_config.json's jinja.chat_template: Qwen2.5-Instruct's template with tools. */
  chatTemplate: string;
  script: ToolScript;
  /** The greedy answers, without the end-of-turn token. */
  callText: string;
  finalText: string;
}

export type ToolModelOrSkip = { model: ToolModel; skip?: undefined } | { model?: undefined; skip: string };

/**
 * The model for `script` (default: HassTurnOn {"name": "kitchen light"}, then "The kitchen light is on."), or one
 * line saying why it cannot be had here (no MNN install or source tree to build the generator, no engine addon).
 */
export async function toolModel(script?: ToolScript): Promise<ToolModelOrSkip> {
  const missing = toolModelToolchainMissing();
  if (missing) return { skip: `the tool model cannot be built here: ${missing}` };
  const engine = engineAvailability();
  if (!engine.available) return { skip: unavailableMessage(engine.reason) };
  const config = await cachedToolModel({ script: toolScript(script) });
  const dir = dirname(config);
  const answers = JSON.parse(readFileSync(join(dir, 'tool-script.json'), 'utf8')) as {
    script: ToolScript;
    callText: string;
    finalText: string;
  };
  const llmConfig = JSON.parse(readFileSync(join(dir, 'llm_config.json'), 'utf8')) as {
    jinja: { chat_template: string };
  };
  return { model: { dir, config, chatTemplate: llmConfig.jinja.chat_template, ...answers } };
}

/** A chat message as the Qwen2.5 template reads it (OpenAI-style tool calls on assistant turns). */
export interface TemplateMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: Array<{ type: 'function'; function: { name: string; arguments: Record<string, unknown> } }>;
}

/** The prompt text the model's own template makes of a conversation, ready for the assistant's turn. */
export function renderPrompt(model: ToolModel, messages: TemplateMessage[], tools?: unknown[]): string {
  return new Template(model.chatTemplate).render({
    messages,
    ...(tools ? { tools } : {}),
    add_generation_prompt: true,
  });
}
