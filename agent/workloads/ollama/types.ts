import type { Logger } from '../../../lib/log.js';
import type { HttpRouter } from '../../http/router.js';
import type { SlotName } from '../../plan/types.js';
import type { ChatModel } from '../shared/chat-model.js';
import type { SlotGate } from '../slots/scheduler.js';
import type { WorkloadModels } from '../slots/slot-models.js';
import type { RgbFrame } from '../vision/image.js';
import type { KeepAliveTimers } from './keep-alive.js';

/** A model the Ollama API offers: the same entries as the OpenAI API's, with the slot that serves each. */
export interface OllamaModel {
  id: string;
  version?: string | undefined;
  slot: SlotName;
  /** Unix seconds. */
  created: number;
  /** Whether it takes images (a VLM), known without loading it. */
  vision?: boolean;
  /** False: it cannot answer now (no engine, failed load); listed nowhere, but asking for it says why. */
  servable?: boolean;
  open(): Promise<ChatModel>;
  gate: SlotGate;
}

export interface OllamaRoutesDeps {
  router: HttpRouter;
  models: () => readonly OllamaModel[];
  slots: Pick<WorkloadModels, 'load' | 'parked' | 'contextTokens' | 'chat'>;
  keepAlive: KeepAliveTimers;
  maxImageBytes: number;
  decodeImage: (bytes: Uint8Array) => Promise<RgbFrame>;
  /** Hub pulls (hf://, ms://); undefined while the model store is not open. */
  pulls: () => PullPort | undefined;
  nowMs: () => number;
  logger: Logger;
}

/** The part of a hub pull's view this endpoint reports (models/hub/pull-jobs.ts's PullJobView). */
export interface PullView {
  id: string;
  source: string;
  state: string;
  phase: string;
  file?: string;
  doneBytes: number;
  totalBytes: number;
  model?: string;
  error?: { message: string; hint?: string };
}

/** The agent's hub pulls (HubPullJobs), as this endpoint uses them. */
export interface PullPort {
  start(source: string, options: { requestedBy: string }): { view: PullView; done: Promise<unknown> };
  subscribe(listener: (view: PullView) => void): () => void;
}
