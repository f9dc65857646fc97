// Builds voice sessions from the configuration and the runtime's slots: picks each stage's implementation from
// what is placed, and refuses clearly when the engine or a model is missing.
import type { Clock } from '../../common/clock.js';
import type { VoiceConfig } from '../../config/sections/voice.js';
import { WorkloadError } from '../shared/errors.js';
import type { WorkloadModels } from '../slots/slot-models.js';
import { findExecutable } from './executable.js';
import { VoiceSession } from './session.js';
import { type AsrStage, AudioLlmAsr, ChatReplyStage, EspeakTts, TalkerTts, type TtsStage } from './stages.js';
import type { TurnSink } from './turn-store.js';

export interface VoiceServiceDeps {
  models: WorkloadModels;
  clock: Clock;
  sink?: TurnSink;
  priority?: { begin(): void; end(): void };
  log?: (msg: string, fields: Record<string, unknown>) => void;
  /** Finds the espeak-ng binary; tests stand in for a board without it. */
  findExecutable?: (command: string) => string | undefined;
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
    const m = this.#deps.models;
    const omni = m.missing('voice.omni') === undefined;
    return {
      vad: m.configured('voice.vad') ? `voice.vad: ${m.describe('voice.vad')}` : 'energy (built-in)',
      asr: omni ? 'omni reply model hears the audio' : `voice.asr: ${m.describe('voice.asr')}`,
      llm: omni ? `voice.omni: ${m.describe('voice.omni')}` : `voice.llm: ${m.describe('voice.llm')}`,
      tts: m.configured('voice.tts') ? `voice.tts: ${m.describe('voice.tts')}` : this.#espeakStage(),
    };
  }

  /** The fallback speech output, claimed only when its binary is really there. */
  #espeakStage(): string {
    const missing = this.#espeakMissing();
    if (missing === undefined) return `espeak-ng (${this.#config.espeak.voice})`;
    return `missing: ${missing}`;
  }

  #espeakMissing(): string | undefined {
    const { command } = this.#config.espeak;
    if ((this.#deps.findExecutable ?? findExecutable)(command) !== undefined) return undefined;
    return `${command} is not installed, and speech output needs it when no speech model is placed: install it (apt install espeak-ng) or place one on slot voice.tts`;
  }

  /** Why a session cannot open now (engine, slots), or undefined. */
  missing(): string | undefined {
    const m = this.#deps.models;
    if (m.missing('voice.omni') === undefined)
      return m.configured('voice.tts') ? undefined : this.#espeakMissing();
    const llm = m.missing('voice.llm');
    if (llm) return llm;
    const asr = m.missing('voice.asr');
    if (asr) return `${asr} (or place an omni model on voice.omni, which hears the audio itself)`;
    return m.configured('voice.tts') ? undefined : this.#espeakMissing();
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
    const missing = this.missing();
    if (missing) {
      const code =
        missing === this.#espeakMissing() ? 'ETOOL' : models.unavailable() ? 'ENOENGINE' : 'ENOMODEL';
      throw new WorkloadError(code, missing);
    }
    const omni = models.missing('voice.omni') === undefined;
    const reply = models.chat(omni ? 'voice.omni' : 'voice.llm');
    const asr: AsrStage | undefined = omni ? undefined : new AudioLlmAsr(models.chat('voice.asr'));
    const tts: TtsStage = models.configured('voice.tts')
      ? new TalkerTts(models.chat('voice.tts'))
      : new EspeakTts(c.espeak);
    const vad = models.vad();
    const session = new VoiceSession({
      id,
      vad,
      segmenter: c.vad,
      ...(asr ? { asr } : {}),
      reply: new ChatReplyStage(reply, { maxNewTokens: c.maxNewTokens, audioIn: omni }),
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
