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
// one stage's end and the next one's start. The timing wrappers are voice-turn-timing.ts's, the table
// voice-turn-report.ts's.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VAD_FRAME_MS, VAD_FRAME_SAMPLES } from '../../agent/workloads/audio/vad.js';
import { resolveVoiceConfig } from '../../agent/workloads/config.js';
import { slotModels, type WorkloadModels } from '../../agent/workloads/slots/slot-models.js';
import type { VoiceEvents } from '../../agent/workloads/voice/session.js';
import {
  AudioLlmAsr,
  ChatReplyStage,
  EspeakTts,
  SentenceChunker,
  type TtsStage,
} from '../../agent/workloads/voice/stages.js';
import { parseWav } from '../../lib/audio/wav.js';
import { systemClock } from '../../lib/clock.js';
import { startSlotRuntime, voiceSlots } from '../../test/engine/_slots.js';
import { mediaFixturesDir } from '../../test/helpers/paths.js';
import { report, type Side } from './voice-turn-report.js';
import { now, Recorder, TimedVoiceService, timedModels, timedTts } from './voice-turn-timing.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

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
