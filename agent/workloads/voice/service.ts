// Builds voice sessions from the configuration: picks each stage's implementation from what is installed, loads
// the models once, and refuses clearly when the engine or a model is missing.
import type { Clock } from '../../common/clock.js';
import type { VoiceConfig } from '../../config/sections/voice.js';
import { WorkloadError } from '../errors.js';
import type { SharedModels } from '../model-loader.js';
import { VoiceSession } from './session.js';
import { type AsrStage, AudioLlmAsr, ChatReplyStage, EspeakTts, TalkerTts, type TtsStage } from './stages.js';
import type { TurnSink } from './turn-store.js';
import { createVad } from './vad.js';

export interface VoiceServiceDeps {
  models: SharedModels;
  clock: Clock;
  sink?: TurnSink;
  priority?: { begin(): void; end(): void };
  log?: (msg: string, fields: Record<string, unknown>) => void;
}

export interface SessionOverrides {
  mode?: VoiceConfig['mode'];
  duplex?: VoiceConfig['duplex'];
}

export class VoiceService {
  readonly #config: VoiceConfig;
  readonly #deps: VoiceServiceDeps;
  readonly #sessions = new Set<VoiceSession>();

  constructor(config: VoiceConfig, deps: VoiceServiceDeps) {
    this.#config = config;
    this.#deps = deps;
  }

  get sessions(): number {
    return this.#sessions.size;
  }

  /** Describes which implementation serves each stage, for the dashboard and the docs. */
  describe(): Record<string, string> {
    const m = this.#config.models;
    return {
      vad: m.vad ? `silero (${m.vad})` : 'energy (built-in)',
      asr: m.omni ? 'omni reply model hears the audio' : (m.asr ?? 'not configured'),
      llm: m.llm ?? 'not configured',
      tts: m.tts ? `talker (${m.tts})` : `espeak-ng (${this.#config.espeak.voice})`,
    };
  }

  async open(id: string, overrides: SessionOverrides = {}): Promise<VoiceSession> {
    const c = this.#config;
    if (!c.enabled)
      throw new WorkloadError('ESTATE', 'Voice is disabled in the configuration (voice.enabled)');
    if (this.#sessions.size >= c.maxSessions) {
      throw new WorkloadError(
        'EBUSY',
        `Too many voice sessions: ${this.#sessions.size} of ${c.maxSessions} in use (voice.maxSessions)`,
      );
    }
    const { models } = this.#deps;
    if (!c.models.llm) {
      throw new WorkloadError('ENOMODEL', 'No reply model configured for voice (voice.models.llm)');
    }
    if (!c.models.omni && !c.models.asr) {
      throw new WorkloadError(
        'ENOMODEL',
        'No speech recognition model configured (voice.models.asr, or voice.models.omni with an omni llm)',
      );
    }
    const llm = await models.chat(c.models.llm, 'the voice reply stage');
    const asr: AsrStage | undefined =
      c.models.omni || !c.models.asr
        ? undefined
        : new AudioLlmAsr(await models.chat(c.models.asr, 'speech recognition'));
    const tts: TtsStage = c.models.tts
      ? new TalkerTts(await models.chat(c.models.tts, 'speech output'))
      : new EspeakTts(c.espeak);
    const vad = await createVad(c.models.vad, {
      availability: () => models.availability(),
      loadModule: (path, io) => models.loader.loadTensor(path, io),
      ...(this.#deps.log ? { log: this.#deps.log } : {}),
    });
    const session = new VoiceSession({
      id,
      vad,
      segmenter: c.vad,
      ...(asr ? { asr } : {}),
      reply: new ChatReplyStage(llm, { maxNewTokens: c.maxNewTokens, audioIn: c.models.omni }),
      tts,
      systemPrompt: c.systemPrompt,
      maxHistoryMessages: c.maxHistoryMessages,
      mode: overrides.mode ?? c.mode,
      duplex: overrides.duplex ?? c.duplex,
      bargeIn: c.bargeIn,
      bargeInMarginDb: c.bargeInMarginDb,
      bargeInMinSpeechMs: c.bargeInMinSpeechMs,
      clock: this.#deps.clock,
      ...(this.#deps.sink ? { sink: this.#deps.sink } : {}),
      ...(this.#deps.priority ? { priority: this.#deps.priority } : {}),
      onClose: () => this.#sessions.delete(session),
    });
    this.#sessions.add(session);
    return session;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#sessions].map((s) => s.close()));
  }
}
