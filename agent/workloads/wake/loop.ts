// The board's own conversation behind its wake word: microphone (or WAV) → the wake gate → the session, the
// session's speech → the speaker. A detection is signalled three ways so people and automations can react: a
// short tone on the speaker, a device event (`voice.wake`, on MQTT `events`), and the gate's events for the
// dashboard. A file source runs faster than real time: it waits whenever the session's backlog is full.
import type { WakeConfig } from '../../config/sections/voice.js';
import type { AudioSink, AudioSource } from '../audio/io.js';
import { type GatedSession, WakeGate, type WakeGateEvents } from './gate.js';
import type { ResolvedKeyword } from './model.js';
import type { WakeStream } from './stream.js';

/** A 120 ms 880 Hz tone with 10 ms ramps: audible, short, not speech (the VAD does not take it for a request). */
export function wakeTone(rate = 16000): Float32Array {
  const n = Math.round(0.12 * rate);
  const ramp = Math.round(0.01 * rate);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const env = Math.min(1, i / ramp, (n - 1 - i) / ramp);
    out[i] = 0.3 * env * Math.sin((2 * Math.PI * 880 * i) / rate);
  }
  return out;
}

export interface GatedLoopOptions {
  config: WakeConfig;
  /** A fresh wake stream over the model on voice.wake (throws when none serves). */
  wakeStream: () => { stream: WakeStream; keywords: ResolvedKeyword[] };
  /** Device event publisher (MQTT `events`). */
  publishEvent?: (type: string, data: Record<string, unknown>) => void;
  /** Every gate event, for the dashboard and the log. */
  onEvent?: <K extends keyof WakeGateEvents & string>(event: K, payload: WakeGateEvents[K]) => void;
}

/** What the loop needs from a voice session beyond the gate's needs (VoiceSession implements it): its speech,
 *  barge-ins and the end of the input. Declared here so that wake/ stays below voice/, which composes it. */
export interface LoopSession extends GatedSession {
  on(event: 'speech-start', listener: (e: { atMs: number }) => void): () => void;
  on(event: 'speech-discarded', listener: (e: { reason: string }) => void): () => void;
  on(event: 'speech-end', listener: (e: { turn: number }) => void): () => void;
  on(event: 'turn-end', listener: (e: { turn: number }) => void): () => void;
  on(event: 'audio', listener: (e: { samples: Float32Array; sampleRate: number }) => void): () => void;
  on(event: 'barge-in', listener: (e: { turn: number }) => void): () => void;
  endOfInput(): Promise<void>;
  idle(): Promise<void>;
}

export function createWakeGate(session: GatedSession, o: GatedLoopOptions): WakeGate {
  let current: WakeStream | undefined;
  const gate = new WakeGate(session, {
    listenTimeoutMs: o.config.listenTimeoutMs,
    followUpMs: o.config.followUpMs,
    preRollMs: o.config.preRollMs,
    stream: () => {
      current = o.wakeStream().stream;
      return current;
    },
    // Read per detection from the stream: a keyword switched off in the settings stops waking the board at once.
    wakes: (keyword) => current?.keywords.find((k) => k.name === keyword)?.enabled !== false,
  });
  for (const event of ['wake', 'state', 'listen-timeout', 'wake-error', 'wake-recovered', 'scores'] as const)
    gate.on(event, (payload) => o.onEvent?.(event, payload as never));
  gate.on('wake', (d) =>
    o.publishEvent?.('voice.wake', {
      keyword: d.keyword,
      score: d.score,
      atMs: Math.round(d.atMs),
      t: Date.now(),
    }),
  );
  gate.on('listen-timeout', (e) =>
    o.publishEvent?.('voice.wake.timeout', { waitedMs: Math.round(e.waitedMs) }),
  );
  gate.on('wake-error', (e) => o.publishEvent?.('voice.wake.error', { message: e.message }));
  return gate;
}

export async function runGatedVoiceLoop(
  session: LoopSession,
  source: AudioSource,
  sink: AudioSink,
  o: GatedLoopOptions,
): Promise<void> {
  const gate = createWakeGate(session, o);
  const offWake = gate.on('wake', () => {
    if (o.config.sound) sink.write(wakeTone(), 16000);
  });
  const offAudio = session.on('audio', (e) => sink.write(e.samples, e.sampleRate));
  const offBargeIn = session.on('barge-in', () => sink.flush());
  try {
    for await (const chunk of source) if (!(await gate.push(chunk))) await session.drained();
    await session.endOfInput();
    await session.idle();
  } finally {
    offWake();
    offAudio();
    offBargeIn();
    gate.close();
    await sink.close();
  }
}
