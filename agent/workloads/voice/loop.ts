// The board's own conversation: microphone (or WAV) into a session, its speech out to the speaker (or a WAV).
// A file source runs faster than real time, so it waits for the VAD whenever the session's backlog is full.
import type { AudioSink, AudioSource } from '../audio/io.js';
import type { VoiceSession } from './session.js';

export async function runVoiceLoop(
  session: VoiceSession,
  source: AudioSource,
  sink: AudioSink,
): Promise<void> {
  const offAudio = session.on('audio', (e) => sink.write(e.samples, e.sampleRate));
  const offBargeIn = session.on('barge-in', () => sink.flush());
  try {
    for await (const chunk of source) if (!session.pushAudio(chunk)) await session.drained();
    await session.endOfInput();
    await session.idle();
  } finally {
    offAudio();
    offBargeIn();
    await sink.close();
  }
}
