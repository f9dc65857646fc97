// An image together with tools, on real MNN, through the OpenAI API with the `openai` client. MNN's own template
// rendering passes no tools, so with tools the agent renders the template and places the image itself: MNN's Omni
// reads `<img>KEY</img>` in the prompt text, and the agent puts that tag in the last user turn, before its text,
// where MNN's own rendering puts it (agent/workloads/shared/template/tool-turn.ts). The model is the fixture VLM
// (tiny-vlm) with Qwen2.5's chat template, which shows tools, in place of its own plain one: its random weights
// call no tool, so what is checked is that the image reaches the model through the tool path as it does through
// MNN's own rendering:
// - with `tool_choice: "none"` the rendered prompt is the one MNN renders itself, so the answer and the prompt's
//   token count are exactly those of the same request without tools;
// - with the tools shown, the image still adds its 18 tokens (vision_start, 16 image pads, vision_end) to the
//   prompt, and the answer differs from the one without the image.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { familyTemplate } from '../helpers/chat-templates.js';
import { startOpenAiAgent } from '../helpers/openai-agent.js';
import { mediaFixturesDir, modelFixturesDir } from '../helpers/paths.js';

const engine = engineAvailability();
const gate = engine.available ? test.serial : test.skip;
if (!engine.available) console.log(`vlm-tools: skipped, ${unavailableMessage(engine.reason)}`);

/** The image's share of the prompt in tiny-vlm (shared/fixtures/models/expected-outputs.json). */
const IMAGE_TOKENS = 18;

/** tiny-vlm with Qwen2.5's template (which shows tools) in its llm_config.json, in a directory of the test's own. */
function toolVlm(t: ExecutionContext): string {
  const src = join(modelFixturesDir, 'tiny-vlm');
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-tool-vlm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const f of [
    'config.json',
    'embeddings_bf16.bin',
    'llm.mnn',
    'llm.mnn.weight',
    'tokenizer.txt',
    'visual.mnn',
  ])
    copyFileSync(join(src, f), join(dir, f));
  const llmConfig = JSON.parse(readFileSync(join(src, 'llm_config.json'), 'utf8')) as {
    jinja: { chat_template: string; eos: string };
  };
  llmConfig.jinja.chat_template = familyTemplate('qwen2.5').source;
  writeFileSync(join(dir, 'llm_config.json'), JSON.stringify(llmConfig, null, 2));
  return dir;
}

function startAgent(t: ExecutionContext) {
  return startOpenAiAgent(t, {
    models: [{ path: toolVlm(t), id: 'tool-vlm' }],
    slots: { 'vision.vlm': { model: 'tool-vlm' } },
    config: { vision: { maxNewTokens: 12 } },
    timeoutMs: 120_000,
  });
}

const TOOLS: ChatCompletionFunctionTool[] = [
  {
    type: 'function',
    function: {
      name: 'HassTurnOn',
      description: 'Turns on/opens/unlocks a device or entity',
      parameters: { type: 'object', properties: { name: { type: 'string' } } },
    },
  },
];

const png = readFileSync(join(mediaFixturesDir, 'camera-seq', 'frame-000.png'));

function messages(withImage: boolean): ChatCompletionMessageParam[] {
  return [
    { role: 'system', content: 'You look at the camera.' },
    {
      role: 'user',
      content: [
        ...(withImage
          ? [
              {
                type: 'image_url' as const,
                image_url: { url: `data:image/png;base64,${png.toString('base64')}` },
              },
            ]
          : []),
        { type: 'text' as const, text: 'What do you see?' },
      ],
    },
  ];
}

gate(
  'an image with tools reaches the VLM through the rendered template as through MNN’s own rendering',
  async (t) => {
    t.timeout(300_000);
    const { client } = await startAgent(t);
    const ask = async (extra: Partial<ChatCompletionCreateParamsNonStreaming>, withImage = true) => {
      const r = await client.chat.completions.create({
        model: 'tool-vlm',
        messages: messages(withImage),
        max_tokens: 12,
        temperature: 0,
        ...extra,
      });
      return {
        text: r.choices[0]?.message.content ?? '',
        promptTokens: r.usage?.prompt_tokens ?? 0,
        finish: r.choices[0]?.finish_reason,
      };
    };

    // MNN renders the template and places the image itself (no tools in the request).
    const own = await ask({});
    t.true(own.text.length > 0);
    // The agent renders it (tools in the request, none shown): the same prompt, so the same answer.
    const rendered = await ask({ tools: TOOLS, tool_choice: 'none' });
    t.is(rendered.promptTokens, own.promptTokens, 'the same prompt, image tokens included');
    t.is(rendered.text, own.text, 'the same greedy answer: the image is where MNN puts it');

    // With the tools shown: the image is still there (its tokens in the prompt) and still read.
    const withTools = await ask({ tools: TOOLS });
    const textOnly = await ask({ tools: TOOLS }, false);
    t.is(withTools.promptTokens - textOnly.promptTokens, IMAGE_TOKENS, 'the image is placed once');
    t.true(withTools.promptTokens > own.promptTokens, 'the tools are in the prompt');
    t.not(withTools.text, textOnly.text, 'the model answers the image, not only the text');
    t.not(withTools.finish, undefined);
  },
);
