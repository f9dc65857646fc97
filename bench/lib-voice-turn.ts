// bench/conversation (3): a voice turn, end of speech → first audio, through the real session (VoiceService's
// session: Silero VAD, tiny-omni-audio ASR, tiny-llm, espeak-ng) against the same stages, each measured alone,
// in paired rounds whose order alternates. What makes the two sides comparable:
//  - the same work: the stages alone get the very utterance the session's VAD cut (from a discarded first round),
//    the same system prompt and maxNewTokens: the same transcript, reply and first sentence (the bench counts them);
//  - the same warm state: before each side a one-token request on the ASR and on the LLM slot, so neither finds
//    the other's KV; espeak-ng prepared on both before the turn; the same hosts, threads and timing wrappers;
//  - the end of speech as the user has it: the silence reaches the session one 32 ms frame at a time, as from a
//    microphone, and the clock starts when the frame that decides the end is pushed; on both sides a VAD hears a
//    frame every 32 ms through the turn, as it does live.
// The overhead is the median of the rounds' own differences (this machine's speed drifts between rounds); the
// stages' times in the pipeline beside their times alone show contention, and the hand-overs are the gaps between
// one stage's end and the next one's start.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VAD_FRAME_MS, VAD_FRAME_SAMPLES, type VoiceActivityDetector } from '../agent/workloads/audio/vad.js';
import { resolveVoiceConfig } from '../agent/workloads/config.js';
import type { ChatModel, ChatRequest, ChatStream } from '../agent/workloads/shared/chat-model.js';
import { slotModels, type WorkloadModels } from '../agent/workloads/slots/slot-models.js';
import { VoiceService } from '../agent/workloads/voice/service.js';
import type { VoiceEvents } from '../agent/workloads/voice/session.js';
import {
  AudioLlmAsr,
  ChatReplyStage,
  EspeakTts,
  SentenceChunker,
  type TtsStage,
} from '../agent/workloads/voice/stages.js';
import type { TurnMetrics } from '../agent/workloads/voice/turn-store.js';
import { parseWav } from '../lib/audio/wav.js';
import { systemClock } from '../lib/clock.js';
import { startSlotRuntime, voiceSlots } from '../test/engine/_slots.js';
import { mediaFixturesDir } from '../test/helpers/paths.js';
import { bar, check, describe, fmt, type Summary, summarize } from './lib/stats.js';

const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** When a stage was called, gave its first piece and ended (performance.now()). */
interface Marks {
  callAt: number;
  firstAt?: number;
  doneAt?: number;
  /** What the engine did with the KV it held (hit / partial / miss). */
  reuse?: string;
}

class Recorder {
  readonly asr: Marks[] = [];
  readonly llm: Marks[] = [];
  readonly tts: Marks[] = [];
  /** The last VAD frame's own time, and the utterances the ASR slot was given. */
  lastVadMs = Number.NaN;
  readonly heard: Float32Array[] = [];
}

function timedChat(model: ChatModel, marks: Marks[], heard?: Float32Array[]): ChatModel {
  return {
    id: model.id,
    capabilities: model.capabilities,
    generate(request: ChatRequest): ChatStream {
      const m: Marks = { callAt: now() };
      marks.push(m);
      if (request.audio) heard?.push(request.audio);
      const inner = model.generate(request);
      void inner.result.then(
        (r) => {
          m.reuse = r.reuse?.outcome ?? 'none';
        },
        () => {},
      );
      return {
        result: inner.result,
        async *[Symbol.asyncIterator]() {
          for await (const piece of inner) {
            m.firstAt ??= now();
            yield piece;
          }
          m.doneAt = now();
        },
      };
    },
  };
}

function timedTts(tts: TtsStage, marks: Marks[]): TtsStage {
  return {
    family: tts.family,
    prepare: () => tts.prepare?.(),
    dispose: () => tts.dispose?.(),
    async *synthesize(text, signal) {
      const m: Marks = { callAt: now() };
      marks.push(m);
      for await (const chunk of tts.synthesize(text, signal)) {
        m.firstAt ??= now();
        yield chunk;
      }
      m.doneAt = now();
    },
  };
}

function timedModels(models: WorkloadModels, rec: Recorder): WorkloadModels {
  return {
    ...models,
    chat(slot) {
      const model = models.chat(slot);
      return slot === 'voice.asr' ? timedChat(model, rec.asr, rec.heard) : timedChat(model, rec.llm);
    },
    vad(energy) {
      const vad = models.vad(energy);
      const timed: VoiceActivityDetector = {
        kind: vad.kind,
        async process(frame) {
          const t = now();
          try {
            return await vad.process(frame);
          } finally {
            rec.lastVadMs = now() - t;
          }
        },
        reset: () => vad.reset(),
        dispose: () => vad.dispose(),
      };
      return timed;
    },
  };
}

/** The session with its TTS stage timed (open() takes the stage from ttsStage()). */
class TimedVoiceService extends VoiceService {
  marks: Marks[] = [];
  override ttsStage(): TtsStage {
    return timedTts(super.ttsStage(), this.marks);
  }
}

/** One side's parts, ms: the stages' own times, the hand-overs (pipeline only) and end of speech → first audio. */
interface Side {
  vad: number;
  asr: number;
  llm: number;
  tts: number;
  /** Alone: TTS to its first chunk with espeak-ng started only when the sentence is due (no prepare()). */
  ttsCold?: number;
  total: number;
  transcript: string;
  sentence: string;
  /** The ASR's and the LLM's KV reuse outcomes. */
  reuse: string;
  hand?: Record<Handover, number>;
  metrics?: TurnMetrics;
}

const HANDOVERS = {
  vadToTurn: 'VAD decision → turn starts',
  turnToAsr: 'turn start → ASR called',
  asrToLlm: 'ASR done → LLM called',
  sentenceToTts: 'sentence cut → TTS called',
  chunkToAudio: 'TTS first chunk → audio event',
} as const;
type Handover = keyof typeof HANDOVERS;

/** The first sentence of a reply as the session cuts it, and when (the stream's end when no sentence ends). */
async function untilFirstSentence(stream: AsyncIterable<string>): Promise<{ sentence: string; at: number }> {
  const chunker = new SentenceChunker();
  let first: { sentence: string; at: number } | undefined;
  for await (const piece of stream) {
    if (first) continue;
    const s = chunker.push(piece)[0];
    if (s !== undefined) first = { sentence: s, at: now() };
  }
  return first ?? { sentence: chunker.flush()[0] ?? '', at: now() };
}

interface Rig {
  rec: Recorder;
  models: WorkloadModels;
  config: ReturnType<typeof resolveVoiceConfig>;
  speech: Float32Array;
  silenceFrame: Float32Array;
  asr: AudioLlmAsr;
  llm: ChatReplyStage;
  /** Prepared when the turn starts, as the session does; `ttsCold` never is. */
  tts: TtsStage;
  ttsCold: TtsStage;
}

/** The turn through the session: the speech at once, then silence at a microphone's pace until the turn ends. */
async function pipelineSide(rig: Rig, round: number, system: string): Promise<Side> {
  const { rec } = rig;
  const service = new TimedVoiceService(
    { ...rig.config, systemPrompt: system },
    { models: rig.models, clock: systemClock },
  );
  const session = await service.open(`bench-${round}`, { duplex: 'full' });
  rec.asr.length = rec.llm.length = 0;
  const t: Partial<Record<'push' | 'decide' | 'turn' | 'sentence' | 'audio', number>> = {};
  let vadMs = Number.NaN;
  let transcript = '';
  let sentence = '';
  const chunker = new SentenceChunker();
  session.once('speech-end', () => {
    t.turn = now();
    t.decide = t.push;
    vadMs = rec.lastVadMs;
  });
  session.once('transcript', (e) => {
    transcript = e.text;
  });
  session.on('reply-delta', (e) => {
    if (t.sentence !== undefined) return;
    const s = chunker.push(e.text)[0];
    if (s !== undefined) {
      t.sentence = now();
      sentence = s;
    }
  });
  session.once('audio', () => {
    t.audio = now();
  });
  const ended = new Promise<VoiceEvents['turn-end']>((r) => session.once('turn-end', r));
  let over = false;
  void ended.then(() => {
    over = true;
  });
  session.pushAudio(rig.speech);
  await session.drained();
  // One frame, then the VAD's verdict on it, then the next 32 ms later: the frame that decides is known.
  const start = now();
  for (let i = 0; !over; i++) {
    if (i > 30_000 / VAD_FRAME_MS) throw new Error('bench (3): the session never ended the turn');
    t.push = now();
    session.pushAudio(rig.silenceFrame);
    await session.drained();
    await sleep(start + (i + 1) * VAD_FRAME_MS - now());
  }
  const end = await ended;
  await session.close();
  if (end.status !== 'completed') throw new Error(`bench (3): the turn ${end.status}: ${end.error}`);
  const asrM = rec.asr[0]!;
  const llmM = rec.llm[0]!;
  const ttsM = service.marks[0]!;
  // No sentence ended in the reply: the session spoke it whole once the stream ended.
  if (t.sentence === undefined) {
    t.sentence = llmM.doneAt!;
    sentence = chunker.flush()[0] ?? '';
  }
  return {
    vad: vadMs,
    asr: asrM.doneAt! - asrM.callAt,
    llm: t.sentence - llmM.callAt,
    tts: ttsM.firstAt! - ttsM.callAt,
    total: t.audio! - t.decide!,
    transcript,
    sentence,
    reuse: `${asrM.reuse}/${llmM.reuse}`,
    metrics: end.metrics,
    hand: {
      vadToTurn: t.turn! - t.decide! - vadMs,
      turnToAsr: asrM.callAt - t.turn!,
      asrToLlm: llmM.callAt - asrM.doneAt!,
      sentenceToTts: ttsM.callAt - t.sentence,
      chunkToAudio: t.audio! - ttsM.firstAt!,
    },
  };
}

/** The same stages one after another with nothing between them: one VAD frame, ASR, LLM, TTS's first chunk. */
async function aloneSide(rig: Rig, system: string, utterance: Float32Array): Promise<Side> {
  const signal = new AbortController().signal;
  rig.rec.asr.length = rig.rec.llm.length = 0;
  // As the session does when speech starts: espeak-ng starts and loads its voice during the speech and the VAD's
  // hangover, before the turn; the ASR and LLM hosts idle as long as in the pipeline, and a VAD hears a frame every
  // 32 ms from then until the first audio, as the session's does (this process and the VAD host stay as busy).
  rig.tts.prepare?.();
  const vad = rig.models.vad();
  let listening = true;
  const microphone = (async () => {
    for (let next = now(); listening; next += VAD_FRAME_MS) {
      await vad.process(rig.silenceFrame);
      await sleep(next + VAD_FRAME_MS - now());
    }
  })();
  await sleep(rig.config.vad.hangoverMs);
  const deciding = rig.models.vad();
  await deciding.process(rig.silenceFrame);
  const v0 = now();
  await deciding.process(rig.silenceFrame);
  const vadMs = now() - v0;
  await deciding.dispose();
  const a0 = now();
  const heard = await rig.asr.transcribe(utterance, signal);
  const asrMs = now() - a0;
  const l0 = now();
  const first = await untilFirstSentence(
    rig.llm.reply({
      history: [
        { role: 'system', content: system },
        { role: 'user', content: heard.text },
      ],
      signal,
    }),
  );
  const llmMs = first.at - l0;
  const s0 = now();
  for await (const _ of rig.tts.synthesize(first.sentence, signal)) break;
  const ttsMs = now() - s0;
  listening = false;
  await microphone;
  await vad.dispose();
  const c0 = now();
  for await (const _ of rig.ttsCold.synthesize(first.sentence, signal)) break;
  const ttsCold = now() - c0;
  return {
    ttsCold,
    vad: vadMs,
    asr: asrMs,
    llm: llmMs,
    tts: ttsMs,
    total: vadMs + asrMs + llmMs + ttsMs,
    transcript: heard.text,
    sentence: first.sentence,
    reuse: `${rig.rec.asr[0]?.reuse}/${rig.rec.llm[0]?.reuse}`,
  };
}

export async function voiceOverhead(rounds: number): Promise<void> {
  const speech = parseWav(readFileSync(join(mediaFixturesDir, 'speech-hello-16k.wav'))).channels[0]!;
  const slots = await startSlotRuntime(['silero-vad', 'tiny-omni-audio', 'tiny-llm'], voiceSlots);
  try {
    const rec = new Recorder();
    const models = timedModels(
      slotModels(() => slots.runtime),
      rec,
    );
    const config = resolveVoiceConfig({ maxNewTokens: 24, maxSessions: 64 });
    const asrModel = models.chat('voice.asr');
    const llmModel = models.chat('voice.llm');
    const rig: Rig = {
      rec,
      models,
      config,
      speech,
      silenceFrame: new Float32Array(VAD_FRAME_SAMPLES),
      asr: new AudioLlmAsr(asrModel),
      llm: new ChatReplyStage(llmModel, { maxNewTokens: config.maxNewTokens }),
      tts: timedTts(new EspeakTts(config.espeak), []),
      ttsCold: new EspeakTts(config.espeak),
    };
    let scrubs = 0;
    /** A one-token request on both slots: the KV then holds an unrelated prompt, whichever side ran before. */
    const scrub = async () => {
      for (const model of [asrModel, llmModel]) {
        const s = model.generate({
          messages: [{ role: 'user', content: `Scrub ${scrubs++}.` }],
          maxNewTokens: 1,
        });
        for await (const _ of s);
      }
    };
    // A discarded first round: warms every stage, and gives the utterance the session's VAD cuts.
    await scrub();
    await pipelineSide(rig, -1, `Warm-up. ${config.systemPrompt}`);
    const utterance = rec.heard.at(-1)!;
    await scrub();
    await aloneSide(rig, `Warm-up. ${config.systemPrompt}`, utterance);

    const pairs: Array<{ pipe: Side; alone: Side; pipeFirst: boolean }> = [];
    for (let round = 0; round < rounds; round++) {
      const system = `Round ${round}. ${config.systemPrompt}`;
      const pipeFirst = round % 2 === 0;
      let p: Side | undefined;
      let a: Side | undefined;
      for (const side of pipeFirst ? ['pipe', 'alone'] : ['alone', 'pipe']) {
        await scrub();
        if (side === 'pipe') p = await pipelineSide(rig, round, system);
        else a = await aloneSide(rig, system, utterance);
      }
      pairs.push({ pipe: p!, alone: a!, pipeFirst });
    }
    rig.tts.dispose?.();
    report(pairs);
  } finally {
    await slots.close();
  }
}

/** A distribution-free 95 % confidence interval of the median: the order statistics the binomial puts it between
 *  ([x(j+1), x(n-j)] for the largest j with P(Binomial(n, 1/2) ≤ j) ≤ 2.5 %; n = 21: the 6th and 16th of 21). */
function medianInterval(samples: number[]): [number, number] {
  const s = [...samples].sort((a, b) => a - b);
  const n = s.length;
  let cdf = 0;
  let j = -1;
  for (let i = 0; i < n; i++) {
    cdf += choose(n, i) / 2 ** n;
    if (cdf > 0.025) break;
    j = i;
  }
  return j < 0 ? [Number.NaN, Number.NaN] : [s[j]!, s[n - 1 - j]!];
}

function choose(n: number, k: number): number {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

const spread = (s: Summary, digits = 1) =>
  `${fmt(s.median, digits).padStart(7)}  ${fmt(s.p10, digits).padStart(7)}–${fmt(s.p90, digits).padEnd(7)}`;

function report(pairs: Array<{ pipe: Side; alone: Side; pipeFirst: boolean }>): void {
  const col = (f: (p: { pipe: Side; alone: Side }) => number) => summarize(pairs.map(f));
  console.log(
    `\n(3) voice turn, end of speech → first audio (Silero VAD, tiny-omni-audio ASR, tiny-llm, espeak-ng), ${pairs.length} paired rounds, order alternating`,
  );
  console.log('    ms, median and p10–p90   in pipeline          alone            pipeline − alone (paired)');
  const parts: Array<[string, keyof Side]> = [
    ['VAD, the deciding frame', 'vad'],
    ['ASR', 'asr'],
    ['LLM to first sentence', 'llm'],
    ['TTS to first chunk', 'tts'],
    ['end of speech → audio', 'total'],
  ];
  for (const [label, k] of parts) {
    const p = col((x) => x.pipe[k] as number);
    const a = col((x) => x.alone[k] as number);
    const d = col((x) => (x.pipe[k] as number) - (x.alone[k] as number));
    console.log(`    ${label.padEnd(24)} ${spread(p)}  ${spread(a)}  ${spread(d)}`);
  }
  const cold = col((x) => x.alone.ttsCold ?? Number.NaN);
  console.log(
    `    TTS to first chunk alone, espeak-ng started only when the sentence is due (no prepare): ${spread(cold)}`,
  );
  console.log('    hand-overs in the pipeline (ms, median, p90, max):');
  for (const [k, label] of Object.entries(HANDOVERS) as Array<[Handover, string]>) {
    const h = col((x) => x.pipe.hand![k]);
    console.log(`      ${label.padEnd(36)} ${fmt(h.median, 2)}  ${fmt(h.p90, 2)}  ${fmt(h.max, 2)}`);
  }
  const m = (k: keyof TurnMetrics) =>
    describe(
      col((x) => {
        const v = x.pipe.metrics?.[k];
        return typeof v === 'number' ? v : Number.NaN;
      }),
      'ms',
      1,
    );
  console.log("    the session's own per-turn record (what the Voice page and telemetry show, whole ms):");
  console.log(`      VAD end decision (audio): ${m('vadEndMs')}`);
  console.log(`      ASR ${m('asrMs')}; LLM TTFT ${m('llmTtftMs')}; first sentence ${m('sentenceMs')}`);
  console.log(
    `      first TTS chunk ${m('ttsFirstMs')}; hand-overs ${m('handoverMs')}; first audio ${m('ttfaMs')}`,
  );
  const same = pairs.filter(
    (x) => x.pipe.transcript === x.alone.transcript && x.pipe.sentence === x.alone.sentence,
  ).length;
  console.log(
    `    same transcript and first sentence on both sides: ${same}/${pairs.length} rounds (sentence: ${JSON.stringify(pairs[0]?.pipe.sentence)})`,
  );
  const tally = (side: 'pipe' | 'alone') => {
    const n = new Map<string, number>();
    for (const x of pairs) n.set(x[side].reuse, (n.get(x[side].reuse) ?? 0) + 1);
    return [...n].map(([k, v]) => `${k} ×${v}`).join(', ');
  };
  console.log(`    KV reuse, ASR/LLM: pipeline ${tally('pipe')}; alone ${tally('alone')}`);
  const diffs = pairs.map((x) => x.pipe.total - x.alone.total);
  const overhead = summarize(diffs);
  const [lo, hi] = medianInterval(diffs);
  const stageDiffs = (['vad', 'asr', 'llm', 'tts'] as const).reduce(
    (sum, k) => sum + col((x) => x.pipe[k] - x.alone[k]).median,
    0,
  );
  const handovers = (Object.keys(HANDOVERS) as Handover[]).reduce(
    (sum, k) => sum + col((x) => x.pipe.hand![k]).median,
    0,
  );
  console.log(
    `    overhead, median of the paired rounds: ${fmt(overhead.median, 1)} ms, 95 % interval ${fmt(lo, 1)}…${fmt(hi, 1)} ms (${hi <= 20 ? 'the target is shown' : 'too wide to show the target'})`,
  );
  console.log(
    `    overhead by parts: the stages' paired medians ${fmt(stageDiffs, 1)} ms + the hand-overs' medians ${fmt(handovers, 2)} ms = ${fmt(stageDiffs + handovers, 1)} ms`,
  );
  const byOrder = (first: boolean) =>
    fmt(
      summarize(pairs.filter((x) => x.pipeFirst === first).map((x) => x.pipe.total - x.alone.total)).median,
      1,
    );
  console.log(`    overhead by order: pipeline first ${byOrder(true)} ms, stages first ${byOrder(false)} ms`);
  const total = col((x) => x.pipe.total);
  const sum = col((x) => x.alone.total);
  const scale = Math.max(total.median, sum.median);
  console.log(bar('pipeline', total.median, scale, `${fmt(total.median, 1)} ms`));
  console.log(bar('stages alone', sum.median, scale, `${fmt(sum.median, 1)} ms`));
  console.log(
    `${check('voice turn overhead (pipeline − stages alone, paired rounds)', overhead.median, 'ms', '≤ 20', overhead.median <= 20)} ${describe(overhead, 'ms', 1)}, p10–p90 ${fmt(overhead.p10, 1)}–${fmt(overhead.p90, 1)} ms`,
  );
}
