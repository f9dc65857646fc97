// Builds voice sessions from the configuration and the runtime's slots: picks each stage's implementation from
// what is placed, and refuses clearly when the engine or a model is missing.
import type { Clock } from '../../../lib/clock.js';
import type { VoiceConfig } from '../../config/sections/voice.js';
import type { SlotName } from '../../plan/types.js';
import { WorkloadError } from '../shared/errors.js';
import type { WorkloadModels } from '../slots/slot-models.js';
import type { ActingAssistant } from '../tools/assistant.js';
import { keywordSettings, type ResolvedKeyword } from '../wake/model.js';
import type { WakeMonitor } from '../wake/monitor.js';
import { WakeStream } from '../wake/stream.js';
import { findExecutable } from './executable.js';
import { VoiceSession } from './session.js';
import {
  type AsrStage,
  AudioLlmAsr,
  ChatReplyStage,
  EspeakTts,
  type ReplyStage,
  TalkerTts,
  type TtsStage,
} from './stages.js';
import type { TurnSink } from './turn-store.js';

export interface VoiceServiceDeps {
  models: WorkloadModels;
  clock: Clock;
  sink?: TurnSink;
  priority?: { begin(): void; end(): void };
  log?: (msg: string, fields: Record<string, unknown>) => void;
  /** Finds the espeak-ng binary; tests stand in for a board without it. */
  findExecutable?: (command: string) => string | undefined;
  /** Sees every wake stream's scores (the dashboard's chart) and passes settings changes on to them. */
  wakeMonitor?: WakeMonitor;
  /** Replies go through it (tool rounds) when given; else the model answers in words only. */
  assistant?: ActingAssistant;
}

/** A model serving one role of the pipeline now. */
export interface ServingModel {
  slot: SlotName;
  modelId: string;
  version: string | undefined;
}

/** What serves each role now (a role nothing can serve is absent), for Wyoming's `info`. */
export interface VoiceRoles {
  asr?: ServingModel;
  tts?: ({ kind: 'talker' } & ServingModel) | { kind: 'espeak'; voice: string };
  reply?: ServingModel;
  wake?: ServingModel & { keywords: ResolvedKeyword[]; languages: string[] };
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

  /** Which roles can be served now and by what: the same choices open() makes for a session. */
  roles(): VoiceRoles {
    if (!this.#config.enabled) return {};
    const m = this.#deps.models;
    const serving = (slot: SlotName): ServingModel | undefined => {
      const modelId = m.missing(slot) === undefined ? m.modelId(slot) : undefined;
      return modelId === undefined ? undefined : { slot, modelId, version: m.version(slot) };
    };
    const omni = serving('voice.omni');
    const asr = omni ?? serving('voice.asr');
    const reply = omni ?? serving('voice.llm');
    let tts: VoiceRoles['tts'];
    if (m.configured('voice.tts')) {
      const talker = serving('voice.tts');
      if (talker) tts = { kind: 'talker', ...talker };
    } else if (this.#espeakMissing() === undefined) {
      tts = { kind: 'espeak', voice: this.#config.espeak.voice };
    }
    let wake: VoiceRoles['wake'];
    try {
      const w = m.wake();
      wake = {
        slot: 'voice.wake',
        modelId: w.modelId,
        version: w.version,
        keywords: keywordSettings(w.keywords, this.#config.wake.keywords),
        languages: w.languages,
      };
    } catch {
      // nothing serves voice.wake now: the role is left out
    }
    return {
      ...(asr ? { asr } : {}),
      ...(tts ? { tts } : {}),
      ...(reply ? { reply } : {}),
      ...(wake ? { wake } : {}),
    };
  }

  /**
   * A wake-word stream over the model on voice.wake with the configured trigger rules (Wyoming's detect, the
   * board's gated loop); a WorkloadError (ENOMODEL, ENOENGINE) when nothing serves the slot.
   */
  wakeStream(source = 'board'): { stream: WakeStream; keywords: ResolvedKeyword[] } {
    const keywords = this.wakeKeywords();
    const stream = new WakeStream(this.#deps.models.wake().model, keywords);
    this.#deps.wakeMonitor?.attach(stream, source, keywords);
    return { stream, keywords };
  }

  /** The keywords of the model on voice.wake with the configured rules; a WorkloadError when none serves. */
  wakeKeywords(): ResolvedKeyword[] {
    if (!this.#config.enabled)
      throw new WorkloadError('ESTATE', 'Voice is disabled in the configuration (voice.enabled)');
    return keywordSettings(this.#deps.models.wake().keywords, this.#config.wake.keywords);
  }

  /** voice.wake.keywords changed: the running streams and the chart take the new rules now. */
  applyWakeRules(): void {
    let keywords: ResolvedKeyword[];
    try {
      keywords = this.wakeKeywords();
    } catch {
      return; // no wake model now: the next stream reads the configuration when there is one
    }
    this.#deps.wakeMonitor?.applyRules(keywords);
  }

  /** Speech to text outside a session (Wyoming): the omni model when one is placed, else voice.asr. */
  asrStage(options: { instruction?: string; maxNewTokens?: number } = {}): AsrStage {
    const m = this.#deps.models;
    const slot: SlotName = m.missing('voice.omni') === undefined ? 'voice.omni' : 'voice.asr';
    this.#refuseWhenMissing(slot);
    return new AudioLlmAsr(m.chat(slot), options);
  }

  /** The reply model outside a session (Wyoming's conversation): voice.omni when placed, else voice.llm. */
  replyStage(): ReplyStage {
    const m = this.#deps.models;
    const slot: SlotName = m.missing('voice.omni') === undefined ? 'voice.omni' : 'voice.llm';
    this.#refuseWhenMissing(slot);
    return new ChatReplyStage(m.chat(slot), {
      maxNewTokens: this.#config.maxNewTokens,
      ...(this.#deps.assistant ? { assistant: this.#deps.assistant } : {}),
    });
  }

  /** Speech output, for sessions and for Wyoming alike: the talker on voice.tts when configured, else espeak-ng. */
  ttsStage(): TtsStage {
    const m = this.#deps.models;
    if (m.configured('voice.tts')) {
      this.#refuseWhenMissing('voice.tts');
      return new TalkerTts(m.chat('voice.tts'));
    }
    if (!this.#config.enabled)
      throw new WorkloadError('ESTATE', 'Voice is disabled in the configuration (voice.enabled)');
    const missing = this.#espeakMissing();
    if (missing) throw new WorkloadError('ETOOL', missing);
    return new EspeakTts(this.#config.espeak);
  }

  /** Voice enabled, the slot serving: else the same refusal a session gets. */
  #refuseWhenMissing(slot: SlotName): void {
    if (!this.#config.enabled)
      throw new WorkloadError('ESTATE', 'Voice is disabled in the configuration (voice.enabled)');
    const m = this.#deps.models;
    const missing = m.missing(slot);
    if (missing) throw new WorkloadError(m.unavailable() ? 'ENOENGINE' : 'ENOMODEL', missing);
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
    const tts = this.ttsStage();
    const vad = models.vad();
    const session = new VoiceSession({
      id,
      vad,
      segmenter: c.vad,
      ...(asr ? { asr } : {}),
      reply: new ChatReplyStage(reply, {
        maxNewTokens: c.maxNewTokens,
        audioIn: omni,
        ...(this.#deps.assistant ? { assistant: this.#deps.assistant } : {}),
      }),
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
