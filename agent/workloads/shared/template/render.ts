// Renders a conversation with tools through the model's own Hugging Face chat template, on the agent's side.
//
// Why @huggingface/jinja: it is the Jinja engine Hugging Face's transformers.js renders chat templates with, so
// the templates that ship in tokenizer_config.json (and so in MNN's llm_config.json) are exactly what it is
// tested against: `namespace`, loop controls, `tojson`, `raise_exception`, `strftime_now`, string methods. It is
// pure JavaScript (no native build for arm64/riscv64) and has no dependencies.
import { createHash } from 'node:crypto';
import { Template } from '@huggingface/jinja';
import { errorMessage } from '../../../../lib/errors.js';
import type { ChatMessage, ToolSpec } from '../chat-model.js';
import { WorkloadError } from '../errors.js';
import type { ModelChatTemplate } from './model-template.js';

/** A message the way HF templates read it: tool calls with `arguments` as an object (not a JSON string). */
interface TemplateMessage {
  role: string;
  content: string;
  tool_calls?: Array<{
    id: string;
    type: 'function';
    function: { name: string; arguments: Record<string, unknown> };
  }>;
  tool_call_id?: string;
  name?: string;
}

export interface RenderOptions {
  tools?: readonly ToolSpec[];
  /** Tool call ids as the template requires them (Mistral: 9 alphanumerics); see ToolFormat.idStyle. */
  idStyle?: 'any' | 'alnum9';
  /** Defaults to true: the prompt ends where the assistant's answer starts. */
  addGenerationPrompt?: boolean;
}

const compiled = new Map<string, Template>();

function compile(source: string): Template {
  let t = compiled.get(source);
  if (!t) {
    try {
      t = new Template(source);
    } catch (err) {
      throw new WorkloadError('ETOOL', `The model's chat template cannot be read: ${errorMessage(err)}`);
    }
    // A board serves a handful of models; the bound only guards against a caller feeding many templates.
    if (compiled.size >= 16) compiled.clear();
    compiled.set(source, t);
  }
  return t;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Mistral's templates refuse ids that are not 9 alphanumerics. Other clients' ids (`call_…`) are mapped the same
 * way every time, so a history renders to the same text on every turn and its KV is reused.
 */
export function alnum9(id: string): string {
  if (/^[A-Za-z0-9]{9}$/.test(id)) return id;
  const digest = createHash('sha256').update(id).digest();
  let out = '';
  for (let i = 0; i < 9; i++) out += ALNUM[(digest[i] ?? 0) % ALNUM.length];
  return out;
}

/**
 * Our messages as the template reads them. Tool results without an id or a name (Home Assistant's Ollama
 * integration sends neither) take those of the call they answer: the n-th result after an assistant message
 * answers its n-th call.
 */
export function templateMessages(
  messages: readonly ChatMessage[],
  idStyle: RenderOptions['idStyle'] = 'any',
): TemplateMessage[] {
  const id = (raw: string) => (idStyle === 'alnum9' ? alnum9(raw) : raw);
  let pending: Array<{ id: string; name: string }> = [];
  let answered = 0;
  return messages.map((m): TemplateMessage => {
    if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length > 0) {
      pending = m.toolCalls.map((c) => ({ id: c.id, name: c.name }));
      answered = 0;
      return {
        role: 'assistant',
        content: m.content,
        tool_calls: m.toolCalls.map((c) => ({
          id: id(c.id),
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        })),
      };
    }
    if (m.role === 'tool') {
      const answers = pending[answered++];
      const callId = m.toolCallId ?? answers?.id;
      const name = m.toolName ?? answers?.name;
      return {
        role: 'tool',
        content: m.content,
        ...(callId !== undefined ? { tool_call_id: id(callId) } : {}),
        ...(name !== undefined ? { name } : {}),
      };
    }
    if (m.role !== 'assistant') pending = [];
    return { role: m.role, content: m.content };
  });
}

/** The prompt text for the engine (template off): the conversation and tools through the model's own template. */
export function renderChatPrompt(
  template: ModelChatTemplate,
  messages: readonly ChatMessage[],
  options: RenderOptions = {},
): string {
  const tools = options.tools && options.tools.length > 0 ? options.tools : undefined;
  try {
    return compile(template.source).render({
      ...template.context,
      messages: templateMessages(messages, options.idStyle),
      ...(tools ? { tools: tools.map((t) => ({ type: t.type, function: t.function })) } : {}),
      add_generation_prompt: options.addGenerationPrompt !== false,
      bos_token: template.bos,
      eos_token: template.eos,
    });
  } catch (err) {
    if (err instanceof WorkloadError) throw err;
    // `raise_exception` in the template (Llama 3.2: one call per message; Mistral: roles must alternate) lands here.
    throw new WorkloadError(
      'ETOOL',
      `The model's chat template refused the conversation: ${errorMessage(err)}`,
    );
  }
}
