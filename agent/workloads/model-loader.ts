// Loading the models the workloads run, once each, shared by every session that uses them. The loader is a
// port: in this process through the engine (engineModelLoader), or whatever the composition root supplies.
import { type EngineAvailability, Llm, Module } from '../../engine/src/index.js';
import { type ChatModel, EngineChatModel, requireEngine } from './chat-model.js';
import type { TensorModel } from './voice/vad.js';

export interface ModelLoader {
  loadChat(configPath: string): Promise<ChatModel>;
  loadTensor(path: string, io: { inputs: string[]; outputs: string[] }): Promise<TensorModel>;
}

/** In-process engine models: Llm for chat/ASR/talker, Module for Silero VAD. Nothing loads the addon until a
 *  model is loaded, so this is safe to create where the engine is missing. */
export async function engineModelLoader(): Promise<ModelLoader> {
  return {
    async loadChat(configPath) {
      return new EngineChatModel(configPath, await Llm.load(configPath));
    },
    loadTensor(path, io) {
      return Module.load(path, io);
    },
  };
}

/** Caches chat models by path: ASR and reply on one omni model load it once. */
export class SharedModels {
  readonly #loader: ModelLoader;
  readonly #availability: () => EngineAvailability;
  readonly #chat = new Map<string, Promise<ChatModel>>();

  constructor(loader: ModelLoader, availability: () => EngineAvailability) {
    this.#loader = loader;
    this.#availability = availability;
  }

  get loader(): ModelLoader {
    return this.#loader;
  }

  availability(): EngineAvailability {
    return this.#availability();
  }

  chat(configPath: string, purpose: string): Promise<ChatModel> {
    requireEngine(this.#availability(), purpose);
    let model = this.#chat.get(configPath);
    if (!model) {
      model = this.#loader.loadChat(configPath);
      // A failed load is not cached: the file may be fixed or installed later.
      model.catch(() => this.#chat.delete(configPath));
      this.#chat.set(configPath, model);
    }
    return model;
  }
}
