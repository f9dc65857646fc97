// The voice turn's latency budget: sentences are handed to TTS as soon as they are complete, each part of a turn
// is stored, and telemetry gets their p50/p95.
import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import { handoverOf } from '../../agent/workloads/voice/session.js';
import { SentenceChunker } from '../../agent/workloads/voice/stages.js';
import { quantile, type TurnMetrics, VoiceTurnStore } from '../../agent/workloads/voice/turn-store.js';

test('a sentence is cut on its punctuation token, not one token later when the next word arrives', (t) => {
  const c = new SentenceChunker();
  t.deepEqual(c.push('Hello'), []);
  t.deepEqual(c.push(' there.'), ['Hello there.']);
  t.deepEqual(c.push(' Is it'), []);
  t.deepEqual(c.push(' warm?'), ['Is it warm?']);
  // A full stop after a digit may be a decimal point: it waits for the next token.
  t.deepEqual(c.push(' It is 3.'), []);
  t.deepEqual(c.push('5 degrees.'), ['It is 3.5 degrees.']);
  t.deepEqual(c.flush(), []);
});

test('the first chunk of a reply may be a clause; later ones wait for the sentence', (t) => {
  const c = new SentenceChunker();
  t.deepEqual(c.push('Well, '), [], 'too short to sound like a phrase');
  t.deepEqual(c.push('if you ask me about the weather, it'), ['Well, if you ask me about the weather,']);
  t.deepEqual(c.push(' looks fine, I think, for a walk'), []);
  t.deepEqual(c.push(' outside.'), ['it looks fine, I think, for a walk outside.']);
  const off = new SentenceChunker({ firstClauseChars: 0 });
  t.deepEqual(off.push('Well, if you ask me about the weather, it'), []);
});

test("hand-overs are the first audio less the stages' own parts", (t) => {
  const m: TurnMetrics = {
    speechMs: 900,
    asrMs: 120,
    llmTtftMs: 80,
    sentenceMs: 150,
    ttsFirstMs: 60,
    ttfaMs: 425,
  };
  handoverOf(m);
  t.is(m.handoverMs, 15);
  const partial: TurnMetrics = { speechMs: 900, ttfaMs: 300 };
  handoverOf(partial);
  t.is(partial.handoverMs, undefined, 'not known without the parts');
});

test('the turn store keeps each part and telemetry gets their p50 and p95', (t) => {
  const store = new VoiceTurnStore(openStore(':memory:'), { maxTurns: 100, maxAgeHours: 1 });
  for (let i = 1; i <= 20; i++) {
    store.record({
      sessionId: 's',
      turn: i,
      startedAt: Date.now(),
      status: 'completed',
      transcript: 'hi',
      reply: 'hello',
      metrics: {
        speechMs: 1000,
        vadEndMs: 500,
        asrMs: 100 + i,
        llmTtftMs: 50,
        sentenceMs: 30,
        ttsFirstMs: 40,
        handoverMs: i,
        ttfaMs: 300,
        kvReusedTokens: 10 * i,
        kvReuse: 'hit',
      },
    });
  }
  const last = store.recent(1)[0]!;
  t.like(last.metrics, { vadEndMs: 500, llmTtftMs: 50, handoverMs: 20, kvReusedTokens: 200, kvReuse: 'hit' });
  const m = store.metrics();
  t.is(m['workload.voice.handover_ms_p50'], 10);
  t.is(m['workload.voice.handover_ms_p95'], 19);
  t.is(m['workload.voice.asr_ms_p95'], 119);
  t.is(m['workload.voice.vad_end_ms_p50'], 500);
  t.is(quantile([], 0.5), undefined);
});

test('a full history drops several exchanges at once, so the next turns keep the same prefix', async (t) => {
  const { trimHistory } = await import('../../agent/workloads/shared/history.js');
  const h: Array<{ role: 'user' | 'assistant'; content: string }> = [];
  const firsts: string[] = [];
  for (let turn = 1; turn <= 12; turn++) {
    h.push({ role: 'user', content: `u${turn}` }, { role: 'assistant', content: `a${turn}` });
    trimHistory(h, 12);
    t.true(h.length <= 12);
    t.is(h.length % 2, 0);
    firsts.push(h[0]!.content);
  }
  // The oldest kept message (where the prompt prefix breaks) changes twice in 12 turns; sliding by one: 6 times.
  const changes = firsts.filter((f, i) => i > 0 && f !== firsts[i - 1]).length;
  t.is(changes, 2);
  t.deepEqual(h.at(-1), { role: 'assistant', content: 'a12' });
});
