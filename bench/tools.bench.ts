// bench/tools: what tool calls cost a request (issue 42).
//  (1) TTFT of the second request with a Home Assistant-sized tool list (20 tools) against the same request
//      without tools, in an engine host, through the slot's chat model (runtimeChatModel: the agent renders
//      Qwen2.5's template with the tools and sends raw text; without tools MNN renders the model's own template).
//      The first request of each pair fills the KV; the second asks another question after the same system prompt
//      (and tools), so its prefill is the new question only when the tools' prefix is reused. Pairs alternate with
//      and without tools; each figure the median of BENCH_TOOLS_ROUNDS (7). The bench model's tokenizer is
//      byte-level (a token a byte), so the 20 tools are written with a few words of description and no arguments
//      to make about 2,000 prompt tokens, the size the real list makes on a BPE tokenizer.
//      The figure that carries the target (≤ 1.2×) is on two layers of Qwen2.5-1.5B's shape (`qwen-1.5b-layers`),
//      where a token's attention over the context weighs against its matrix work what it does in the models boards
//      run. Even with the tools' prefix reused perfectly (2,069 of the 2,089 prompt tokens kept), each of the
//      second request's 20 new tokens still attends over up to 2,089 positions (the tools and the system prompt),
//      which the request without tools (69 tokens, 49 kept) does not; per new token and layer (prefillMacs in
//      lib/bench-model.ts), at most 1 + attention/matrices, and the bench prints the exact allowance (1.13×, 1.69×):
//        qwen-1.5b-layers: matrices 1536·(2·1536 + 2·256) + 3·1536·8960 = 46.8 M MACs,
//                          attention 2 · 12·128 · 2,089 = 6.4 M MACs (0.14 of the matrices): up to ≈ 1.14×;
//        bench (narrow):   matrices 512·(2·512 + 2·256) + 3·512·1408 = 2.95 M MACs,
//                          attention 2 · 8·64 · 2,089 = 2.14 M MACs (0.73 of the matrices): up to ≈ 1.73×,
//      and MNN's attention over a long KV cache runs below its matrix kernels' rate per MAC, so the narrow model's
//      time is more still (1.82× measured on a quiet machine, against 1.04× on the realistic shape). That figure
//      measures the narrow model's shape, not the tool path: it is printed as information, without a target.
//  (2) The agent's own work per request: rendering the template with the 20 tools and a tool round in the history,
//      and parsing a streamed answer with a call, in token-sized pieces. Target: ≤ 5 ms (median).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GenerateEvent, GenerateRequest } from '../agent/runtime/engine/engine-port.js';
import type { ChatMessage, ToolSpec } from '../agent/workloads/shared/chat-model.js';
import { toolSupport } from '../agent/workloads/shared/template/format.js';
import type { ModelChatTemplate } from '../agent/workloads/shared/template/model-template.js';
import { renderChatPrompt } from '../agent/workloads/shared/template/render.js';
import { ToolCallStreamParser } from '../agent/workloads/shared/template/stream-parser.js';
import { runtimeChatModel } from '../agent/workloads/slots/runtime-chat-model.js';
import { EngineHostClient, engineAvailability, unavailableMessage } from '../engine/index.js';
import { createMemoryLogger } from '../lib/log.js';
import { repoRoot } from '../test/helpers/paths.js';
import {
  BENCH_SHAPES,
  BenchModelUnavailable,
  type BenchShapeName,
  ensureBenchModel,
  prefillMacs,
} from './lib/bench-model.js';
import { check, fmt, summarize } from './lib/stats.js';

const ROUNDS = Number(process.env['BENCH_TOOLS_ROUNDS'] ?? 7);
const OVERHEAD_RUNS = 200;

const availability = engineAvailability();
if (!availability.available) {
  console.log(`SKIP bench/tools: ${unavailableMessage(availability.reason)}`);
  process.exit(0);
}

const QWEN25: ModelChatTemplate = {
  source: readFileSync(join(repoRoot, 'test/fixtures/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja'), 'utf8'),
  bos: '',
  eos: '<|im_end|>',
  context: {},
};

/** Home Assistant's Assist tools by name (HassTurnOn …), short enough for the byte-level bench tokenizer. */
function haTools(): ToolSpec[] {
  const names = [
    'HassTurnOn',
    'HassTurnOff',
    'HassToggle',
    'HassLightSet',
    'HassClimateSetTemperature',
    'HassClimateGetTemperature',
    'HassMediaPause',
    'HassMediaUnpause',
    'HassMediaNext',
    'HassSetVolume',
    'HassOpenCover',
    'HassCloseCover',
    'HassVacuumStart',
    'HassVacuumReturnToBase',
    'HassShoppingListAddItem',
    'HassListAddItem',
    'HassStartTimer',
    'HassCancelTimer',
    'HassGetWeather',
    'GetLiveContext',
  ];
  return names.map((name) => ({
    type: 'function',
    function: {
      name,
      description: name.replace(/^Hass/, '').replace(/([a-z])([A-Z])/g, '$1 $2'),
      parameters: {},
    },
  }));
}

const SYSTEM = 'You are a voice assistant for Home Assistant. Answer briefly.';

interface Sample {
  ttftMs: number;
  promptTokens: number;
  reused: number;
}

/** The slot's chat model over one engine host: what runtime.stream does, minus placement. */
function chatModelOver(host: EngineHostClient) {
  const firstPiece: { at?: number } = {};
  const stream = async function* (
    _slot: unknown,
    req: GenerateRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<GenerateEvent> {
    const gen = host.generate(req.prompt, {
      maxNewTokens: req.maxNewTokens ?? 4,
      ...(req.applyTemplate !== undefined ? { applyTemplate: req.applyTemplate } : {}),
      ...(signal ? { signal } : {}),
    });
    for await (const text of gen) {
      firstPiece.at ??= performance.now();
      yield { type: 'text', text };
    }
    const r = await gen.result;
    const reuse = r.stats.reuse;
    yield {
      type: 'done',
      finishReason: r.finishReason === 'stop' ? 'stop' : 'length',
      stats: {
        promptTokens: r.stats.promptTokens,
        decodeTokens: r.stats.generatedTokens,
        prefillMs: r.stats.prefillUs / 1000,
        decodeMs: r.stats.decodeUs / 1000,
        ...(reuse
          ? {
              reuse: {
                outcome: reuse.outcome,
                reason: reuse.reason,
                reusedTokens: reuse.reusedTokens,
                prefilledTokens: reuse.prefilledTokens,
              },
            }
          : {}),
      },
    };
  };
  const model = runtimeChatModel({ stream, speak: () => (async function* () {})() } as never, 'voice.llm', {
    id: 'bench-llm',
    capabilities: { vision: false, audio: false, talker: false },
    template: () => QWEN25,
  });
  return {
    async ask(messages: ChatMessage[], tools?: ToolSpec[]): Promise<Sample> {
      firstPiece.at = undefined;
      const t0 = performance.now();
      const s = model.generate({ messages, maxNewTokens: 4, ...(tools ? { tools } : {}) });
      for await (const _ of s) {
        // drained; the TTFT is the engine's first piece, before the parser may hold it
      }
      const r = await s.result;
      return {
        ttftMs: (firstPiece.at ?? performance.now()) - t0,
        promptTokens: r.promptTokens,
        reused: r.reuse?.reusedTokens ?? 0,
      };
    },
  };
}

/** The shape whose figure carries the ≤ 1.2× target; the other is information (see the head comment). */
const TARGET_SHAPE: BenchShapeName = 'qwen-1.5b-layers';

async function ttftWithTools(shapeName: BenchShapeName): Promise<void> {
  const part = shapeName === TARGET_SHAPE ? '(1)' : '(1b)';
  let config: string;
  try {
    config = ensureBenchModel(undefined, shapeName);
  } catch (err) {
    if (err instanceof BenchModelUnavailable) {
      console.log(`SKIP ${part} the ${shapeName} model: ${err.message}`);
      return;
    }
    throw err;
  }
  const host = await EngineHostClient.start({ name: 'tools', logger: createMemoryLogger() });
  try {
    // The bench model says 2,048 positions; the tools' prompt takes about that, so the context is widened (the
    // generated model's rotary positions are computed, not a table that ends there).
    await host.load(config, { thread_num: 1, max_position_embeddings: 4096 });
    await host.complete('Warm up.', { maxNewTokens: 4 });
    const chat = chatModelOver(host);
    const tools = haTools();
    const q = (n: number): ChatMessage[] => [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: n === 1 ? 'Turn on the kitchen light.' : 'Is the front door locked?' },
    ];
    const withTools: Sample[] = [];
    const without: Sample[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? [true, false] : [false, true];
      for (const useTools of order) {
        await host.reset();
        await chat.ask(q(1), useTools ? tools : undefined);
        const second = await chat.ask(q(2), useTools ? tools : undefined);
        (useTools ? withTools : without).push(second);
      }
    }
    const a = summarize(withTools.map((s) => s.ttftMs));
    const b = summarize(without.map((s) => s.ttftMs));
    const w = withTools[0];
    const o = without[0];
    console.log(
      `${part} second request TTFT, ${shapeName} model, one thread, engine host, median of ${ROUNDS} rounds (${tools.length} tools)`,
    );
    console.log(
      `    with tools:    ${fmt(a.median, 1)} ms  (${w?.promptTokens} prompt tokens, ${w?.reused} reused)`,
    );
    console.log(
      `    without tools: ${fmt(b.median, 1)} ms  (${o?.promptTokens} prompt tokens, ${o?.reused} reused)`,
    );
    const ratio = a.median / b.median;
    // What the prefill's arithmetic alone allows: the new tokens attend over the held tools as well.
    const macs = (x: Sample | undefined) =>
      x ? prefillMacs(BENCH_SHAPES[shapeName], x.reused, x.promptTokens - x.reused) : Number.NaN;
    console.log(
      `    the prefill's multiply-accumulates allow ${fmt(macs(w) / macs(o))}x (attention over the held tools)`,
    );
    if (shapeName === TARGET_SHAPE)
      console.log(
        `    ratio ${fmt(ratio)}x  ${check(`second request TTFT with 20 tools / without (${shapeName})`, ratio, 'x', '<= 1.2', ratio <= 1.2)}`,
      );
    else
      console.log(
        `    ratio ${fmt(ratio)}x  (information, no target: on this narrow model attention over the kept tools outweighs the matrices' share, see the head comment)`,
      );
  } finally {
    await host.close();
  }
}

function overhead(): void {
  const tools = haTools();
  const support = toolSupport(QWEN25);
  if (!support.ok) throw new Error(support.reason);
  const call = { id: 'call_1', name: 'HassTurnOn', arguments: { name: 'kitchen light' } };
  const history: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: 'Turn on the kitchen light.' },
    { role: 'assistant', content: '', toolCalls: [call] },
    { role: 'tool', content: '{"success": true}' },
    { role: 'user', content: 'And the hallway?' },
  ];
  const answer =
    'Sure.\n<tool_call>\n{"name": "HassTurnOn", "arguments": {"name": "hallway light", "area": "hallway"}}\n</tool_call>';
  // Token-sized pieces, as the engine hands them over.
  const pieces = answer.match(/.{1,4}/gs) ?? [];
  renderChatPrompt(QWEN25, history, { tools }); // the template is compiled once per model
  const samples: number[] = [];
  for (let i = 0; i < OVERHEAD_RUNS; i++) {
    const t0 = performance.now();
    renderChatPrompt(QWEN25, history, { tools });
    const parser = new ToolCallStreamParser(support.format, tools);
    let text = '';
    for (const piece of pieces) text += parser.push(piece).text;
    text += parser.finish().text;
    if (parser.calls.length !== 1 || text !== 'Sure.\n') throw new Error(`the answer did not parse: ${text}`);
    samples.push(performance.now() - t0);
  }
  const s = summarize(samples);
  console.log(`(2) render (20 tools, a tool round in the history) + parse (a call), ${OVERHEAD_RUNS} runs`);
  console.log(`    median ${fmt(s.median, 2)} ms, p90 ${fmt(s.p90, 2)} ms`);
  console.log(`    ${check('template render + parse per request', s.median, 'ms', '<= 5', s.median <= 5)}`);
}

await ttftWithTools(TARGET_SHAPE);
await ttftWithTools('bench');
overhead();
