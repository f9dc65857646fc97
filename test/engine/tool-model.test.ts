// The scripted tool-call model (engine/tools/tool-model, docs/TOOL-MODEL.md) on the real engine: prompts rendered by
// @huggingface/jinja from the model's own Qwen2.5 template, passed as raw text. The greedy answer is the tool call
// when the latest turn is the user's and the final sentence when it is a tool result, however long the prompt, and
// the same with the prefix KV kept from the previous request.
import test from 'ava';
import { type GenerationResult, Llm } from '../../engine/index.js';
import { runLlmDemo } from '../helpers/llm-demo.js';
import { llmDemoMissing, llmDemoPath } from '../helpers/mnn-tools.js';
import { skipWithLine } from '../helpers/skip.js';
import { renderPrompt, type TemplateMessage, type ToolModel, toolModel } from '../helpers/tool-model.js';

const CALL = {
  type: 'function' as const,
  function: { name: 'HassTurnOn', arguments: { name: 'kitchen light' } },
};
const ASK: TemplateMessage = { role: 'user', content: 'Turn on the kitchen light.' };
const ROUND: TemplateMessage[] = [
  ASK,
  { role: 'assistant', content: '', tool_calls: [CALL] },
  { role: 'tool', content: '{"success": true, "targets": ["light.kitchen"]}' },
];

/** 20 Home-Assistant-like tools: a tools block of about 3000 tokens in this model's vocabulary. */
const TOOLS = Array.from({ length: 20 }, (_, i) => ({
  type: 'function',
  function: {
    name: `HassTool${i}`,
    description: `Does action number ${i} to a device in the home, such as turning it on or off or setting its level`,
    parameters: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'The name of the device' },
        area: { type: 'string', description: 'The area of the home the device is in' },
        brightness: { type: 'integer', description: 'Brightness in percent' },
      },
      required: ['name'],
    },
  },
}));

const found = await toolModel();
if (found.skip !== undefined) {
  skipWithLine(`SKIP tool-model tests: ${found.skip}`);
} else {
  const model: ToolModel = found.model;

  async function answer(llm: Llm, prompt: string, reusePrefix = true): Promise<GenerationResult> {
    return llm.complete(prompt, { applyTemplate: false, reusePrefix });
  }

  test('the default script: a Hermes-style call, then a sentence', (t) => {
    t.is(
      model.callText,
      '<tool_call>\n{"name": "HassTurnOn", "arguments": {"name": "kitchen light"}}\n</tool_call>',
    );
    t.is(model.finalText, 'The kitchen light is on.');
  });

  test('no tool result: the call, one piece per script token, then end of turn', async (t) => {
    await using llm = await Llm.load(model.config);
    const generation = llm.generate(renderPrompt(model, [ASK]), { applyTemplate: false });
    const pieces: string[] = [];
    for await (const piece of generation) pieces.push(piece);
    const result = await generation.result;
    t.deepEqual(pieces, [
      '<tool_call>',
      '\n{"name": "HassTurnOn", "arguments": ',
      '{"name": "kitchen light"}',
      '}\n',
      '</tool_call>',
    ]);
    t.is(result.text, model.callText);
    t.is(result.finishReason, 'stop');
  });

  test('with a tool result: the final sentence, then end of turn', async (t) => {
    await using llm = await Llm.load(model.config);
    const result = await answer(llm, renderPrompt(model, ROUND));
    t.is(result.text, model.finalText);
    t.is(result.finishReason, 'stop');
  });

  test('with 20 tools in the system prompt: the same answers', async (t) => {
    await using llm = await Llm.load(model.config);
    const ask = renderPrompt(model, [ASK], TOOLS);
    t.true((await llm.encode(ask)).length > 2000, 'the tools block is long');
    t.is((await answer(llm, ask, false)).text, model.callText);
    t.is((await answer(llm, renderPrompt(model, ROUND, TOOLS), false)).text, model.finalText);
  });

  test('multi-turn: the latest turn decides, at any distance from the marker', async (t) => {
    await using llm = await Llm.load(model.config);
    const chat: TemplateMessage[] = [
      { role: 'system', content: 'You control the home.' },
      { role: 'user', content: 'Hello there.' },
      { role: 'assistant', content: 'Hello, how can I help?' },
    ];
    t.is((await answer(llm, renderPrompt(model, [...chat, ASK], TOOLS), false)).text, model.callText);
    const done = [...chat, ...ROUND, { role: 'assistant' as const, content: model.finalText }];
    t.is((await answer(llm, renderPrompt(model, done.concat([ASK]), TOOLS), false)).text, model.callText);
    const second = [...done, ...ROUND];
    t.is((await answer(llm, renderPrompt(model, second, TOOLS), false)).text, model.finalText);
    // Two tool results in one turn (the template joins consecutive tool messages).
    const two: TemplateMessage[] = [...second, { role: 'tool', content: '{"success": true}' }];
    t.is((await answer(llm, renderPrompt(model, two, TOOLS), false)).text, model.finalText);
    // About 2000 tokens between the opener the head must find and the end of the prompt, either way round.
    const long = 'the light in the living room is set to a brightness of fifty percent; '.repeat(100);
    const longResult: TemplateMessage[] = [...done, ASK, ROUND[1]!, { role: 'tool', content: long }];
    const longPrompt = renderPrompt(model, longResult, TOOLS);
    t.true((await llm.encode(longPrompt)).length > 5000, 'the prompt is long');
    t.is((await answer(llm, longPrompt, false)).text, model.finalText);
    const longAsk: TemplateMessage[] = [...second, { role: 'user', content: `${long} Turn it on.` }];
    t.is((await answer(llm, renderPrompt(model, longAsk, TOOLS), false)).text, model.callText);
  });

  test('prefix reuse: a second request on the kept KV answers as a full prefill', async (t) => {
    await using llm = await Llm.load(model.config);
    const ask = renderPrompt(model, [ASK], TOOLS);
    const first = await answer(llm, ask);
    t.is(first.text, model.callText);
    t.is(first.stats.reuse?.outcome, 'miss');
    // The same prompt again: all but its last two tokens are kept.
    const again = await answer(llm, ask);
    t.is(again.text, model.callText);
    t.is(again.stats.reuse?.reason, 'regenerate');
    // The round goes on: the whole previous prompt is kept, only the call and the tool result are prefilled.
    const round = await answer(llm, renderPrompt(model, ROUND, TOOLS));
    t.is(round.text, model.finalText);
    t.is(round.stats.reuse?.outcome, 'hit');
    t.true((round.stats.reuse?.reusedTokens ?? 0) > 2000, `kept ${round.stats.reuse?.reusedTokens}`);
    // A new request after the round: the call again, on the kept KV and on a full prefill.
    const next = renderPrompt(model, [...ROUND, { role: 'assistant', content: model.finalText }, ASK], TOOLS);
    const kept = await answer(llm, next);
    t.is(kept.stats.reuse?.outcome, 'hit');
    t.is(kept.text, model.callText);
    t.is((await answer(llm, next, false)).text, model.callText);
  });

  test("MNN's own template rendering (llm_config.json jinja) gives the same prompt and answer", async (t) => {
    await using llm = await Llm.load(model.config);
    const byMnn = await llm.complete([{ role: 'user', content: ASK.content }]);
    t.is(byMnn.text, model.callText);
    t.is(byMnn.stats.promptTokens, (await llm.encode(renderPrompt(model, [ASK]))).length);
  });

  const binary = llmDemoPath();
  const missing = llmDemoMissing(binary);
  if (missing) skipWithLine(`SKIP llm_demo on the tool model: ${missing}`);
  else
    test("MNN's llm_demo gives the call to a user's request", async (t) => {
      // llm_demo wraps each prompt line in the model's template as a user turn, and ends the answer with a newline.
      const run = await runLlmDemo({ binary, config: model.config, prompt: ASK.content });
      t.is(run.text, `${model.callText}\n`);
      t.is(run.decodeTokens, 6, 'five script tokens and the end-of-turn token');
    });

  test('another script: its call and its sentence', async (t) => {
    const other = await toolModel({
      call: { name: 'HassLightSet', arguments: { area: 'living room', brightness: 40 } },
      final: 'Done, the living room is at 40 percent.',
    });
    if (other.skip !== undefined) return t.fail(other.skip);
    t.is(
      other.model.callText,
      '<tool_call>\n{"name": "HassLightSet", "arguments": {"area": "living room", "brightness": 40}}\n</tool_call>',
    );
    await using llm = await Llm.load(other.model.config);
    t.is((await answer(llm, renderPrompt(other.model, [ASK], TOOLS))).text, other.model.callText);
    t.is((await answer(llm, renderPrompt(other.model, ROUND, TOOLS))).text, other.model.finalText);
  });
}
