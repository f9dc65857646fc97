// bench/conversation: what conversation KV reuse buys, and the voice turn's own overhead (issue 29).
//  (1) TTFT per turn of a 16-turn conversation on the benchmark-size model in an engine host, each turn adding
//      ~60 tokens, with prefix reuse on and off (two hosts, turns alternating between them so the machine's drift
//      hits both alike); the tokens each turn prefilled; each turn's TTFT the median of BENCH_CONVERSATION_ROUNDS
//      (5) whole conversations. Target: turn 16 ≤ 1.2× turn 1 with reuse. Beside it, the ratio the turns' own
//      multiply-accumulates allow (attention over the history grows with it, whatever is reused).
// (1b) The same on two layers of Qwen2.5-1.5B's shape (3 rounds), where attention over the history weighs what it
//      does in the models boards run. BENCH_LLM_OVERRIDES='{"attention_mode":0}' tries MNN settings on both.
//  (2) Two conversations interleaved on one instance: TTFT at turn 8 with conversation snapshots (a context per
//      conversation on the instance's weights) and without (one KV: each turn falls back to the shared system
//      prompt), against the same conversation alone.
//  (3) The voice turn, end of speech → first audio, through the real session (Silero VAD, tiny-omni-audio ASR,
//      tiny-llm, espeak-ng) against the sum of the same stages' own times, each measured alone in the same run.
//      Target: overhead ≤ 20 ms (the median of the rounds' own differences).
// (3b) Speech starts on the first sentence while the LLM still decodes: a stand-in LLM paced like a board's
//      (25 ms a token) through the real session and espeak-ng; how long before the last token the first audio came.
// (3c) A decoded token's wait before the agent has it, through an engine host, with the host's batched hand-over and
//      without: the hold's cost per token stays under the hold (bench/lib/token-hold.ts).
//  (4) Output identity: every fixture LLM answers a multi-turn script (edit, system prompt change, regenerate)
//      with reuse and with full prefills; the share of generated tokens that agree. Target: 100 %.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EspeakTts } from '../agent/workloads/voice/stages.js';
import {
  type ChatMessage,
  EngineHostClient,
  engineAvailability,
  Llm,
  unavailableMessage,
} from '../engine/index.js';
import { parseWav } from '../lib/audio/wav.js';
import { systemClock } from '../lib/clock.js';
import { createMemoryLogger } from '../lib/log.js';
import { models } from '../test/engine/_engine.js';
import { mediaFixturesDir } from '../test/helpers/paths.js';
import {
  BENCH_SHAPES,
  BenchModelUnavailable,
  type BenchShapeName,
  ensureBenchModel,
  prefillMacs,
} from './lib/bench-model.js';
import {
  ask,
  conversation,
  medianTurns,
  SYSTEM,
  TURNS,
  type TurnSample,
  userMessage,
} from './lib/conversation-turns.js';
import { envJsonObject } from './lib/env-json.js';
import { bar, check, describe, fmt, summarize } from './lib/stats.js';
import { tokenHold } from './lib/token-hold.js';
import { voiceOverhead } from './lib/voice-turn.js';

const SHOWN = [1, 4, 8, 16];
const CONVERSATION_ROUNDS = Number(process.env['BENCH_CONVERSATION_ROUNDS'] ?? 5);
const VOICE_ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
// (3) pairs rounds on a machine whose speed drifts: its median needs more of them than the other parts.
const TURN_ROUNDS = Number(process.env['BENCH_VOICE_ROUNDS'] ?? 41);

const availability = engineAvailability();
if (!availability.available) {
  console.log(`SKIP bench/conversation: ${unavailableMessage(availability.reason)}`);
  process.exit(0);
}

/** BENCH_LLM_OVERRIDES: a JSON object of MNN llm settings for (1) and (2), e.g. '{"attention_mode":0}'. */
function llmOverrides(): Record<string, unknown> {
  return { thread_num: 1, ...envJsonObject('BENCH_LLM_OVERRIDES') };
}

function describeShape(name: BenchShapeName): string {
  const x = BENCH_SHAPES[name];
  return `hidden ${x.hidden}, ${x.layers} layers, ${x.heads} heads over ${x.kvHeads} KV heads of ${x.headDim}, MLP ${x.inter}`;
}

/** (1) on one model shape; (2) after it on the benchmark model. */
async function conversationTtft(shapeName: BenchShapeName, roundCount: number): Promise<void> {
  const part = shapeName === 'bench' ? '(1)' : '(1b)';
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
  const logger = createMemoryLogger();
  const on = await EngineHostClient.start({ name: 'conversation:reuse', logger });
  const off = await EngineHostClient.start({ name: 'conversation:full', logger });
  try {
    const overrides = llmOverrides();
    await on.load(config, overrides);
    await off.load(config, overrides);
    // A discarded first generation on each host (a fresh model's first run allocates), then an empty KV.
    for (const host of [on, off]) {
      await host.complete('Warm up.', { maxNewTokens: 4 });
      await host.reset();
    }
    // Each turn adds ~60 tokens: a ~40-token question and a 20-token answer. The tokenizer, in this process.
    const questions: string[] = [];
    {
      await using tokenizer = await Llm.load(config, { overrides: { thread_num: 1 } });
      for (let t = 1; t <= TURNS; t++) questions.push(await userMessage(tokenizer, t, 40));
    }
    // Each turn's TTFT is one prefill of ~60 tokens: a single one swings by tens of ms on a busy machine, so the
    // conversation runs CONVERSATION_ROUNDS times from an empty KV and each turn's figure is its median.
    const rounds: Array<{ on: TurnSample[]; off: TurnSample[] }> = [];
    let agree = 0;
    for (let r = 0; r < roundCount; r++) {
      for (const host of [on, off]) await host.reset();
      const round = await conversation(on, off, questions);
      rounds.push(round.samples);
      agree += round.agree;
    }
    const samples = { on: medianTurns(rounds.map((r) => r.on)), off: medianTurns(rounds.map((r) => r.off)) };
    const asked = TURNS * roundCount;
    console.log(
      `${part} TTFT per turn, 16-turn conversation, ${shapeName} model (${describeShape(shapeName)}), one thread, engine host, median of ${roundCount} rounds${process.env['BENCH_LLM_OVERRIDES'] ? `, overrides ${process.env['BENCH_LLM_OVERRIDES']}` : ''}`,
    );
    console.log('    turn  prompt  prefilled(on)  TTFT on    (MNN prefill)  TTFT off   prefilled(off)');
    for (const t of SHOWN) {
      const a = samples.on[t - 1]!;
      const b = samples.off[t - 1]!;
      console.log(
        `    ${String(t).padStart(4)}  ${String(a.prompt).padStart(6)}  ${String(a.prefilled).padStart(13)}  ${fmt(a.ttftMs, 1).padStart(7)} ms  (${fmt(a.prefillMs, 1).padStart(7)} ms)  ${fmt(b.ttftMs, 1).padStart(7)} ms ${String(b.prefilled).padStart(14)}`,
      );
    }
    const scale = Math.max(...samples.off.map((s) => s.ttftMs), ...samples.on.map((s) => s.ttftMs));
    console.log('');
    for (const t of SHOWN) {
      console.log(
        bar(
          `turn ${t} reuse on`,
          samples.on[t - 1]!.ttftMs,
          scale,
          `${fmt(samples.on[t - 1]!.ttftMs, 1)} ms`,
        ),
      );
      console.log(
        bar(
          `turn ${t} reuse off`,
          samples.off[t - 1]!.ttftMs,
          scale,
          `${fmt(samples.off[t - 1]!.ttftMs, 1)} ms`,
        ),
      );
    }
    const ratioOn = samples.on[TURNS - 1]!.ttftMs / samples.on[0]!.ttftMs;
    const ratioOff = samples.off[TURNS - 1]!.ttftMs / samples.off[0]!.ttftMs;
    console.log(
      `    turn 16 / turn 1: reuse on ${fmt(ratioOn)}x, off ${fmt(ratioOff)}x; answers equal on ${agree}/${asked} turns`,
    );
    const perRound = rounds.map((r) => r.on[TURNS - 1]!.ttftMs / r.on[0]!.ttftMs).sort((a, b) => a - b);
    console.log(
      `    turn 16 / turn 1 with reuse, round by round: ${perRound.map((x) => `${fmt(x)}x`).join(' ')}`,
    );
    // What the turns' own arithmetic allows: turn 16 prefills about as many tokens as turn 1, but each of them
    // attends over the whole history. A measured ratio near this floor is the model's shape, not the reuse.
    const macs = (x: TurnSample) => prefillMacs(BENCH_SHAPES[shapeName], x.prompt - x.prefilled, x.prefilled);
    const floor = macs(samples.on[TURNS - 1]!) / macs(samples.on[0]!);
    console.log(
      `    the compute floor of that ratio (multiply-accumulates of turn 16's prefill over turn 1's, attention over the history included): ${fmt(floor)}x`,
    );
    console.log(
      `${check(`TTFT turn 16 / turn 1, reuse on (${shapeName} model)`, ratioOn, 'x', '≤ 1.2', ratioOn <= 1.2)} (reuse off: ${fmt(ratioOff)}x; compute floor ${fmt(floor)}x)`,
    );
    console.log(
      `${check(`answers equal with reuse on and off (${shapeName} model)`, (agree / asked) * 100, '%', '= 100', agree === asked)}`,
    );

    if (shapeName === 'bench') await interleavedTtft(config, on, samples.on[7]!, questions);
  } finally {
    await on.close();
    await off.close();
  }
}

/** (2) Two conversations interleaved on one instance, with conversation snapshots (a third host with room for two)
 *  and without (`on`, (1)'s reuse host: one KV, each turn finds the other's prompt), turns alternating hosts. */
async function interleavedTtft(
  config: string,
  on: EngineHostClient,
  aloneTurn8: TurnSample,
  questions: string[],
): Promise<void> {
  const snap = await EngineHostClient.start({ name: 'conversation:snapshots', logger: createMemoryLogger() });
  try {
    const snapshots = { max: 2, budgetBytes: 512 * 1024 * 1024, prepare: true };
    const loaded = await snap.load(config, { thread_num: 1 }, snapshots);
    await snap.complete('Warm up.', { maxNewTokens: 4 }).then(() => Promise.all([snap.reset(), on.reset()]));
    const hosts = { snap, on } as const;
    // Both conversations from their first turn, CONVERSATION_ROUNDS times; the figure is the median turn 8 of all.
    const turn8 = { snap: [] as TurnSample[], on: [] as TurnSample[] };
    let equal = 0;
    let asked = 0;
    for (let r = 0; r < CONVERSATION_ROUNDS; r++) {
      const convs = { snap: [[], []] as ChatMessage[][], on: [[], []] as ChatMessage[][] };
      for (let t = 0; t < 8; t++) {
        for (const i of [0, 1]) {
          const question = `${i === 0 ? 'First' : 'Second'} conversation. ${questions[t]!}`;
          const answers = { snap: '', on: '' };
          for (const mode of (t + i) % 2 === 0 ? (['snap', 'on'] as const) : (['on', 'snap'] as const)) {
            const h = convs[mode][i]!;
            h.push({ role: 'user', content: question });
            const s = await ask(hosts[mode], [{ role: 'system', content: SYSTEM }, ...h], true);
            h.push({ role: 'assistant', content: s.text });
            answers[mode] = s.text;
            if (t === 7) turn8[mode].push(s);
          }
          asked++;
          if (answers.snap === answers.on) equal++;
        }
      }
    }
    const alone = aloneTurn8.ttftMs;
    const withSnap = summarize(turn8.snap.map((s) => s.ttftMs)).median;
    const without = summarize(turn8.on.map((s) => s.ttftMs)).median;
    // The last round's two turn-8 samples on each side, for their prefill counts and reuse outcomes.
    const lastSnap = turn8.snap.slice(-2);
    const lastOn = turn8.on.slice(-2);
    const last = lastSnap.at(-1)!;
    console.log(
      `\n(2) two conversations interleaved on one instance, turn 8 (median of the two conversations' turn 8 in ${CONVERSATION_ROUNDS} rounds)`,
    );
    console.log(`    alone (from (1)):     TTFT ${fmt(alone, 1)} ms, prefilled ${aloneTurn8.prefilled}`);
    console.log(
      `    with snapshots:       TTFT ${fmt(withSnap, 1)} ms, prefilled ${lastSnap.map((s) => s.prefilled).join(' / ')}, ${lastSnap.map((s) => s.outcome).join(' / ')} (${last.contexts})`,
    );
    console.log(
      `    without (one KV):     TTFT ${fmt(without, 1)} ms, prefilled ${lastOn.map((s) => s.prefilled).join(' / ')}, ${lastOn.map((s) => s.outcome).join(' / ')}`,
    );
    console.log(`    answers equal with and without snapshots on ${equal}/${asked} turns`);
    console.log(
      `    the extra context was made at load in ${fmt(loaded.timing.contextsMs ?? Number.NaN, 0)} ms (MNN's own load: ${fmt(loaded.timing.mnnLoadMs, 0)} ms; this graph holds its weights inline)`,
    );
    const scale2 = Math.max(withSnap, without, alone);
    console.log(bar('turn 8 with snapshots', withSnap, scale2, `${fmt(withSnap, 1)} ms`));
    console.log(bar('turn 8 without', without, scale2, `${fmt(without, 1)} ms`));
    console.log(bar('turn 8 alone', alone, scale2, `${fmt(alone, 1)} ms`));
    console.log(
      `${check('interleaved turn 8 TTFT with snapshots / alone', withSnap / alone, 'x', '≤ 1.2', withSnap / alone <= 1.2)} (without snapshots: ${fmt(without / alone)}x)`,
    );
    console.log(
      `${check('answers equal with and without snapshots', (equal / asked) * 100, '%', '= 100', equal === asked)}`,
    );
  } finally {
    await snap.close();
  }
}

/** (4) Generated tokens that agree between reuse and full prefill, per fixture, over an edit/regenerate script. */
async function outputIdentity(): Promise<void> {
  const script = ['Hello, who are you?', 'Tell me about the weather.', 'And tomorrow?'];
  const fixtures: Array<[string, string, string]> = [
    ['tiny-llm', models.tinyLlm, ''],
    ['tiny-llm-int4', models.tinyLlmInt4, ''],
    ['tiny-vlm', models.tinyVlm, `<img>${join(mediaFixturesDir, 'test_red_64x64.png')}</img>`],
    [
      'tiny-omni-audio',
      models.tinyOmniAudio,
      `<audio>${join(mediaFixturesDir, 'speech-hello-16k.wav')}</audio>`,
    ],
  ];
  let total = 0;
  let same = 0;
  console.log('\n(4) output identity, reuse vs full prefill');
  for (const [name, config, media] of fixtures) {
    const run = async (reusePrefix: boolean) => {
      await using llm = await Llm.load(config);
      const ids: number[][] = [];
      const h: ChatMessage[] = [];
      const say = async (msgs: ChatMessage[]) => {
        const r = await llm.complete([{ role: 'system', content: SYSTEM }, ...msgs], {
          reusePrefix,
          maxNewTokens: 16,
          mediaTags: true,
        });
        ids.push([...(r.stats.outputIds ?? [])]);
        return r.text;
      };
      for (const [i, q] of script.entries()) {
        h.push({ role: 'user', content: i === 0 ? `${media}${q}` : q });
        h.push({ role: 'assistant', content: await say(h) });
      }
      h[0] = { role: 'user', content: `${media}Hi, what is your name?` };
      h.pop();
      await say(h);
      await say(h);
      return ids;
    };
    const a = await run(true);
    const b = await run(false);
    let n = 0;
    let s = 0;
    for (const [i, ids] of a.entries()) {
      const other = b[i] ?? [];
      n += Math.max(ids.length, other.length);
      s += ids.filter((id, j) => other[j] === id).length;
    }
    total += n;
    same += s;
    console.log(`    ${name.padEnd(16)} ${s}/${n} tokens agree`);
  }
  const pct = (same / Math.max(1, total)) * 100;
  console.log(
    `${check('output identity with full prefill, all fixtures', pct, '%', '= 100', same === total)} ${fmt(pct, 1)} %`,
  );
}

/**
 * (3b) Does speech start on the first sentence while the LLM still decodes? The fixtures' random-weight models
 * rarely end a sentence early, so a stand-in LLM paced at 25 ms a token (a 2B model on a board's CPU) answers
 * three sentences; the real session and espeak-ng speak them.
 */
async function ttsOverlap(): Promise<void> {
  const { VoiceSession } = await import('../agent/workloads/voice/session.js');
  const { EnergyVad } = await import('../agent/workloads/audio/vad.js');
  const reply = 'Sure, here it is. The board runs three models at once. It answers in under a second. ';
  const tokens = reply.split(/(?= )/);
  const speech = parseWav(readFileSync(join(mediaFixturesDir, 'speech-hello-16k.wav'))).channels[0]!;
  const leads: number[] = [];
  for (let round = 0; round < VOICE_ROUNDS; round++) {
    let lastTokenAt = 0;
    let firstAudioAt = 0;
    const session = new VoiceSession({
      id: `overlap-${round}`,
      vad: new EnergyVad(),
      asr: {
        family: 'instant',
        transcribe: async () => ({
          text: 'hello',
          result: {
            text: 'hello',
            finishReason: 'stop',
            promptTokens: 1,
            generatedTokens: 1,
            prefillMs: 0,
            decodeMs: 0,
          },
        }),
      },
      reply: {
        family: 'paced',
        audioIn: false,
        reply: () => {
          let settle!: (r: import('../agent/workloads/shared/chat-model.js').ChatResult) => void;
          const result = new Promise<import('../agent/workloads/shared/chat-model.js').ChatResult>((r) => {
            settle = r;
          });
          async function* run() {
            for (const t of tokens) {
              await new Promise((r) => setTimeout(r, 25));
              lastTokenAt = performance.now();
              yield t;
            }
            settle({
              text: reply,
              finishReason: 'stop',
              promptTokens: 1,
              generatedTokens: tokens.length,
              prefillMs: 0,
              decodeMs: 25 * tokens.length,
            });
          }
          const gen = run();
          return { result, [Symbol.asyncIterator]: () => gen };
        },
      },
      tts: new EspeakTts(),
      systemPrompt: '',
      maxHistoryMessages: 0,
      mode: 'vad',
      duplex: 'full',
      bargeIn: false,
      bargeInMarginDb: 15,
      bargeInMinSpeechMs: 96,
      clock: systemClock,
    });
    session.once('audio', () => {
      firstAudioAt = performance.now();
    });
    const ended = new Promise<void>((resolve) => session.once('turn-end', () => resolve()));
    session.pushAudio(speech);
    session.pushAudio(new Float32Array(16000));
    await session.endOfInput();
    await ended;
    await session.close();
    leads.push(lastTokenAt - firstAudioAt);
  }
  const lead = summarize(leads);
  console.log(
    `\n(3b) stand-in LLM at 25 ms/token, three sentences, espeak-ng: first audio came ${describe(lead, 'ms', 1)} before the reply's last token`,
  );
  console.log(
    `${check('speech starts before the LLM has finished (first audio before the last token)', lead.median, 'ms', '> 0', lead.median > 0)}`,
  );
}

// BENCH_PARTS=3,3b runs only those parts ((1) includes (2)); all of them by default.
const parts = new Set((process.env['BENCH_PARTS'] ?? '1,1b,3,3b,3c,4').split(',').map((p) => p.trim()));
if (parts.has('1')) await conversationTtft('bench', CONVERSATION_ROUNDS);
// (1b) The same conversation on two layers of a board's real model shape (bench/lib/bench-model.ts).
if (parts.has('1b')) await conversationTtft('qwen-1.5b-layers', Math.min(3, CONVERSATION_ROUNDS));
if (parts.has('3')) await voiceOverhead(TURN_ROUNDS);
if (parts.has('3b')) await ttsOverlap();
if (parts.has('3c')) {
  try {
    await tokenHold(ensureBenchModel(), 2 * VOICE_ROUNDS);
  } catch (err) {
    if (!(err instanceof BenchModelUnavailable)) throw err;
    console.log(`SKIP (3c) the benchmark model: ${err.message}`);
  }
}
if (parts.has('4')) await outputIdentity();
