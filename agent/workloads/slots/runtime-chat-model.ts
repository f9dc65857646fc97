import type { SlotName } from '../../plan/types.js';
import { EngineFailure, type GenerateEvent, type GenerateRequest } from '../../runtime/engine/engine-port.js';
import type { SlotServing } from '../../runtime/serving/serving.js';
import type {
  ChatModel,
  ChatRequest,
  ChatResult,
  ChatStream,
  ModelCapabilities,
} from '../shared/chat-model.js';
import { toolSupport } from '../shared/template/format.js';
import type { ModelChatTemplate } from '../shared/template/model-template.js';
import { needsToolTurn, type ToolTurn, toolTurn } from '../shared/template/tool-turn.js';

// The workloads' ChatModel port over a runtime slot: voice, vision and the OpenAI API call the slot, and the
// runtime decides which engine host serves it (and swaps or falls back underneath without them noticing).

export interface RuntimeChatModelOptions {
  /** Shown in /v1/models and stored with turns; the slot name when absent. */
  id?: string;
  capabilities: ModelCapabilities;
  /** The chat template of the model serving the slot now (read when a request has tools). */
  template?: () => ModelChatTemplate | undefined;
}

/** What the engine is asked: the messages for MNN's own template, or with tools the prompt rendered here. */
function engineRequest(request: ChatRequest, tools: ToolTurn | undefined): GenerateRequest {
  return {
    prompt: tools ? tools.prompt : request.messages,
    ...(tools ? { applyTemplate: false } : {}),
    ...(tools?.mediaPlaced ? { mediaPlaced: true } : {}),
    ...(request.images?.length ? { images: request.images } : {}),
    ...(request.audio ? { audios: [{ samples: request.audio, sampleRate: 16000 }] } : {}),
    ...(request.maxNewTokens !== undefined ? { maxNewTokens: request.maxNewTokens } : {}),
  };
}

/** The result of an answer that ended, with the calls it made (an answer with calls ends in `tool_calls`). */
function endOf(
  ev: Extract<GenerateEvent, { type: 'done' }>,
  tools: ToolTurn | undefined,
): Omit<ChatResult, 'text'> {
  const outcome = tools?.outcome() ?? {};
  const called = (outcome.toolCalls?.length ?? 0) > 0 && ev.finishReason !== 'backend-lost';
  return {
    ...outcome,
    finishReason: called ? 'tool_calls' : ev.finishReason,
    promptTokens: ev.stats.promptTokens,
    generatedTokens: ev.stats.decodeTokens,
    prefillMs: ev.stats.prefillMs,
    decodeMs: ev.stats.decodeMs,
    ...(ev.stats.reuse ? { reuse: ev.stats.reuse } : {}),
    ...(ev.detail !== undefined ? { detail: ev.detail } : {}),
  };
}

export function runtimeChatModel(
  serving: Pick<SlotServing, 'stream' | 'speak'>,
  slot: SlotName,
  options: RuntimeChatModelOptions,
): ChatModel {
  const talker = options.capabilities.talker
    ? {
        speak: (o: { text: string; signal?: AbortSignal }) => serving.speak(slot, { text: o.text }, o.signal),
      }
    : {};
  return {
    id: options.id ?? slot,
    capabilities: { ...options.capabilities },
    ...talker,
    supportsTools: () => toolSupport(options.template?.()).ok,
    generate(request: ChatRequest): ChatStream {
      let settle!: (r: ChatResult) => void;
      let fail!: (e: unknown) => void;
      const result = new Promise<ChatResult>((resolve, reject) => {
        settle = resolve;
        fail = reject;
      });
      // The error also surfaces through iteration; an unobserved `result` must not crash the process.
      result.catch(() => {});
      let iterated = false;
      return {
        result,
        async *[Symbol.asyncIterator]() {
          if (iterated) throw new Error('a chat stream can be iterated only once');
          iterated = true;
          let text = '';
          let settled = false;
          const finish = (r: Omit<ChatResult, 'text'>) => {
            settled = true;
            settle({ text, ...r });
          };
          const empty = { promptTokens: 0, generatedTokens: 0, prefillMs: 0, decodeMs: 0 };
          let tools: ToolTurn | undefined;
          try {
            // With tools the template is rendered here (MNN's own rendering passes no tools) and sent as text.
            if (needsToolTurn(request)) tools = toolTurn(request, options.template?.(), options.id ?? slot);
            const events = serving.stream(slot, engineRequest(request, tools), request.signal);
            for await (const ev of events) {
              if (ev.type === 'text') {
                const shown = tools ? tools.push(ev.text) : ev.text;
                if (shown.length > 0) {
                  text += shown;
                  yield shown;
                }
              } else {
                const rest = tools?.finish() ?? '';
                if (rest.length > 0) {
                  text += rest;
                  yield rest;
                }
                finish(endOf(ev, tools));
              }
            }
          } catch (err) {
            // The caller's own abort is an ending, not an error; everything else (a crash, a drain) is.
            if (request.signal?.aborted && (!(err instanceof EngineFailure) || err.kind === 'cancelled')) {
              finish({ finishReason: 'aborted', ...empty });
              return;
            }
            settled = true;
            fail(err);
            throw err;
          } finally {
            if (!settled) finish({ finishReason: 'aborted', ...empty });
          }
        },
      };
    },
  };
}
