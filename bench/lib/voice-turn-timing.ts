// bench/conversation (3)'s timing wrappers (lib-voice-turn.ts): the session's models and TTS stage wrapped so that
// every call records when it was made, gave its first piece and ended, and the VAD its last frame's own time; the
// same wrappers on both sides of the comparison, so neither pays for them alone.
import type { VoiceActivityDetector } from '../../agent/workloads/audio/vad.js';
import type { ChatModel, ChatRequest, ChatStream } from '../../agent/workloads/shared/chat-model.js';
import type { WorkloadModels } from '../../agent/workloads/slots/slot-models.js';
import { VoiceService } from '../../agent/workloads/voice/service.js';
import type { TtsStage } from '../../agent/workloads/voice/stages.js';

export const now = () => performance.now();

/** When a stage was called, gave its first piece and ended (performance.now()). */
export interface Marks {
  callAt: number;
  firstAt?: number;
  doneAt?: number;
  /** What the engine did with the KV it held (hit / partial / miss). */
  reuse?: string;
}

export class Recorder {
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

export function timedTts(tts: TtsStage, marks: Marks[]): TtsStage {
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

export function timedModels(models: WorkloadModels, rec: Recorder): WorkloadModels {
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
export class TimedVoiceService extends VoiceService {
  marks: Marks[] = [];
  override ttsStage(): TtsStage {
    return timedTts(super.ttsStage(), this.marks);
  }
}
