// The voice loop acts: a spoken request whose reply makes a tool round. The session's ASR and TTS are doubles,
// the reply is the real ChatReplyStage over the acting assistant and the real built-in tools, with a scripted
// chat model; the turn's calls reach the session's events, `turn-end` and the turn store.
import test from 'ava';
import { toolsDefaults } from '../../agent/config/sections/tools.js';
import { openStore } from '../../agent/store/database.js';
import { EnergyVad } from '../../agent/workloads/audio/vad.js';
import type { ChatResult } from '../../agent/workloads/shared/chat-model.js';
import { ActingAssistant } from '../../agent/workloads/tools/assistant.js';
import { BuiltinTools } from '../../agent/workloads/tools/builtin.js';
import { TimerService } from '../../agent/workloads/tools/timers.js';
import { type VoiceEvents, VoiceSession } from '../../agent/workloads/voice/session.js';
import {
  type AsrStage,
  ChatReplyStage,
  type PcmChunk,
  type TtsStage,
} from '../../agent/workloads/voice/stages.js';
import { VoiceTurnStore } from '../../agent/workloads/voice/turn-store.js';
import { systemClock } from '../../lib/clock.js';
import { ScriptedChatModel } from './scripted-chat-model.js';

const RATE = 16000;
const tone = (ms: number) =>
  Float32Array.from({ length: (ms * RATE) / 1000 }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 220 * i) / RATE));

const asr: AsrStage = {
  family: 'fake',
  async transcribe() {
    const text = 'set a pasta timer for ten minutes';
    return {
      text,
      result: {
        text,
        finishReason: 'stop',
        promptTokens: 1,
        generatedTokens: 1,
        prefillMs: 1,
        decodeMs: 1,
      } as ChatResult,
    };
  },
};

class SilentTts implements TtsStage {
  readonly family = 'fake';
  readonly sentences: string[] = [];
  async *synthesize(text: string): AsyncIterable<PcmChunk> {
    this.sentences.push(text);
    yield { samples: new Float32Array(160), sampleRate: RATE };
  }
}

test('a spoken request sets a timer: calls in the events, turn-end and the stored turn; the answer is spoken', async (t) => {
  const db = openStore(':memory:');
  const store = new VoiceTurnStore(db, { maxTurns: 100, maxAgeHours: 24 });
  const timers = new TimerService(db, { now: Date.now, maxTimers: () => 5 });
  const assistant = new ActingAssistant({
    sources: () => [new BuiltinTools({ settings: () => toolsDefaults, now: Date.now, timers })],
    settings: () => ({ enabled: true, allowRemoteActs: false, limits: toolsDefaults.limits }),
  });
  const model = new ScriptedChatModel([
    { toolCalls: [{ id: 'c1', name: 'set_timer', arguments: { minutes: 10, label: 'pasta' } }] },
    (request) => ({
      pieces: [request.messages.some((m) => m.role === 'tool') ? 'Your pasta timer is set. ' : 'No.'],
    }),
  ]);
  const tts = new SilentTts();
  const s = new VoiceSession({
    id: 'test',
    vad: new EnergyVad(),
    asr,
    reply: new ChatReplyStage(model, { maxNewTokens: 64, assistant }),
    tts,
    systemPrompt: 'Be brief.',
    maxHistoryMessages: 4,
    mode: 'push-to-talk',
    duplex: 'full',
    bargeIn: false,
    bargeInMarginDb: 15,
    bargeInMinSpeechMs: 96,
    clock: systemClock,
    sink: store,
  });
  t.teardown(() => s.close());
  const calls: Array<VoiceEvents['tool-call']> = [];
  const results: Array<VoiceEvents['tool-result']> = [];
  s.on('tool-call', (e) => calls.push(e));
  s.on('tool-result', (e) => results.push(e));
  const ended = new Promise<VoiceEvents['turn-end']>((resolve) => s.once('turn-end', resolve));
  s.pushToTalkStart();
  s.pushAudio(tone(600));
  s.pushToTalkEnd();
  const end = await ended;
  t.is(end.status, 'completed', end.error);
  t.is(end.reply, 'Your pasta timer is set. ');
  t.deepEqual(tts.sentences, ['Your pasta timer is set.']);
  t.like(calls[0], { turn: 1, id: 'c1', name: 'set_timer', arguments: { minutes: 10, label: 'pasta' } });
  t.like(results[0], { turn: 1, id: 'c1', name: 'set_timer', ok: true });
  t.like(end.toolCalls?.[0], {
    name: 'set_timer',
    source: 'builtin',
    outcome: 'ok',
    arguments: { minutes: 10 },
  });
  t.is(timers.running()[0]?.label, 'pasta');
  const stored = store.recent(1)[0]!;
  t.like(stored.toolCalls?.[0], { id: 'c1', name: 'set_timer', ok: true, outcome: 'ok' });
  t.regex(stored.toolCalls?.[0]?.content ?? '', /set for 10 minutes/);
  // Only the exchange is remembered, not the tool round.
  t.deepEqual(
    s.history.map((m) => m.role),
    ['user', 'assistant'],
  );
});
