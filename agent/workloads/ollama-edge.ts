// The workloads' Ollama edge: the Ollama-compatible API over the same models as the OpenAI API's, with the
// agent's hub pulls for /api/pull (its routes and listener are ollama/'s; this only hands it the module's parts).
import type { AgentContext } from '../module.js';
import type { ApiModels } from './api-models.js';
import { type OllamaApi, startOllamaApi } from './ollama/start.js';
import type { PullPort } from './ollama/types.js';
import type { frameDecoder } from './services.js';
import type { WorkloadModels } from './slots/slot-models.js';

export function startOllamaEdge(
  ctx: AgentContext,
  parts: {
    models: WorkloadModels;
    apiModels: () => ApiModels;
    maxFrameBytes: number;
    decode: ReturnType<typeof frameDecoder>;
    /** Undefined until the model store is open. */
    pulls: (() => PullPort | undefined) | undefined;
  },
): Promise<OllamaApi> {
  return startOllamaApi(ctx, {
    models: parts.apiModels,
    slots: parts.models,
    maxImageBytes: parts.maxFrameBytes,
    decodeImage: parts.decode,
    pulls: () => parts.pulls?.(),
  });
}
