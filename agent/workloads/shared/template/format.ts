// Which tool-call syntax a model writes, read from its own chat template (as llama.cpp's and Ollama's template
// parsers do) rather than from a list of model names: the template is what taught the model the syntax, it
// shows the model its earlier calls in that syntax, and a fine-tune under another name keeps it.
import type { ModelChatTemplate } from './model-template.js';
import { renderChatPrompt } from './render.js';

export type ToolFormatKind =
  /** Hermes, Qwen2.5, Qwen3: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`. */
  | 'hermes'
  /** Qwen3-Coder, Qwen3.5: `<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>`. */
  | 'qwen-xml'
  /** Llama 3.x: the whole answer is `{"name": …, "parameters": {…}}`, optionally after `<|python_tag|>`. */
  | 'llama3-json'
  /** Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}, "id": "…"}]`, or `[TOOL_CALLS]name[ARGS]{…}`. */
  | 'mistral'
  /** A template that shows tools without a syntax we know: a JSON object (or array) that is the whole answer. */
  | 'generic-json';

export interface ToolFormat {
  kind: ToolFormatKind;
  /** Mistral's templates raise on tool call ids that are not 9 alphanumerics. */
  idStyle: 'any' | 'alnum9';
}

export type ToolSupport = { ok: true; format: ToolFormat } | { ok: false; reason: string };

const PROBE = 'mnn_edge_probe_tool';

/** Where the template writes the calls of earlier turns, or says how to call: the syntax the model learned. */
export function toolFormatKind(source: string): ToolFormatKind {
  if (source.includes('[TOOL_CALLS]')) return 'mistral';
  if (source.includes('<function=') && source.includes('<parameter=')) return 'qwen-xml';
  if (source.includes('<tool_call>')) return 'hermes';
  if (
    source.includes('<|python_tag|>') ||
    (source.includes('<|start_header_id|>') && source.includes('"parameters"'))
  )
    return 'llama3-json';
  return 'generic-json';
}

const known = new Map<string, ToolSupport>();

/**
 * Whether the template can show a model its tools, and in which syntax it answers. A template counts as
 * supporting tools when a probe tool's name appears in what it renders: a template that never reads `tools`
 * (most base models', and MNN's simplified ones) would drop them silently.
 */
export function toolSupport(template: ModelChatTemplate | undefined): ToolSupport {
  if (!template)
    return {
      ok: false,
      reason: 'its export carries no chat template (llm_config.json has no jinja.chat_template)',
    };
  const cached = known.get(template.source);
  if (cached) return cached;
  let support: ToolSupport;
  if (!/\btools\b/.test(template.source)) {
    support = { ok: false, reason: 'its chat template does not show tools to the model' };
  } else {
    try {
      const rendered = renderChatPrompt(template, [{ role: 'user', content: 'probe' }], {
        tools: [
          {
            type: 'function',
            function: {
              name: PROBE,
              description: 'probe',
              parameters: { type: 'object', properties: { x: { type: 'string', description: 'x' } } },
            },
          },
        ],
      });
      const kind = toolFormatKind(template.source);
      support = rendered.includes(PROBE)
        ? { ok: true, format: { kind, idStyle: kind === 'mistral' ? 'alnum9' : 'any' } }
        : { ok: false, reason: 'its chat template does not show tools to the model' };
    } catch (err) {
      support = { ok: false, reason: (err as Error).message };
    }
  }
  if (known.size >= 16) known.clear();
  known.set(template.source, support);
  return support;
}
