// The dashboard's wire contract: every shape the dashboard's pages read from the agent's HTTP API, and the few
// pure helpers the pages share with the agent. The browser code (dashboard/src/) imports from outside itself
// only this file; scripts/check-layers.ts (DASHBOARD_CONTRACT) fails on any other import. So a change to the
// daemon's internals reaches the browser only through a line here, where it reads as a change to what the API
// promises, and the pages never lean on how the runtime happens to be laid out.
// The shapes stay defined where the agent builds them (one definition each); this file decides which are on
// the wire. Types only, but for three values the pages need at run time: the slot names, which model tasks
// each slot can use, and the wording of a load split. Each comes from a file that imports nothing, so the
// browser bundle carries nothing of the daemon besides them.

export type { LogRecord } from '../../lib/log-tail.js';
export type { PullJobView } from '../../models/hub/pull-jobs.js';
export type { HubListing, HubRecommendations } from '../installed-models/hub-catalog.js';
export type { Candidate, SlotConstraints, SlotName } from '../plan/types.js';
export { SLOT_KINDS, SLOT_NAMES } from '../plan/types.js';
export type { LoadTimeRecord, SlotStats } from '../runtime/desired/types.js';
export { describeLoadSplit } from '../runtime/engine/load-split.js';
export type { SlotPhase, SlotState } from '../runtime/measuring/slot-states.js';
export type { InstanceLoad } from '../runtime/reconciling/load-times.js';
export type { BackendView, OverviewView } from './overview.js';
export type {
  EngineStatus,
  HubSourceView,
  InstalledModelView,
  InstallProgressView,
  OtaJobView,
  PlacementView,
  TelemetryPoint,
  WorkloadStatus,
} from './ports.js';

// The acting assistant's typed conversation (POST /api/assistant/chat) and its timers (/api/assistant/timers).
// The agent answers the chat as NDJSON: one AssistantChatEvent per line, ending with `done` or `error`.
// Written here first, as the contract the dashboard's Chat page and the assistant's routes both keep; when the
// routes define these shapes where they build them, this block becomes re-exports of those.

export interface AssistantChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface AssistantChatRequest {
  messages: AssistantChatMessage[];
  /** Images for a vision model, as `data:image/...;base64,` URLs. */
  images?: string[];
  /** Keeps the agent's conversation (and its KV cache) across requests from the same page. */
  conversationId?: string;
}

export type AssistantChatEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; id: string; name: string; arguments: Record<string, unknown> }
  | { type: 'tool_result'; id: string; ok: boolean; content: string; ms: number }
  | {
      type: 'done';
      finishReason: string;
      usage: { promptTokens?: number; completionTokens?: number; [k: string]: number | undefined };
    }
  | { type: 'error'; message: string };

/** One tool call of a turn as the Voice page's turn details show it (arguments, outcome, time taken). */
export interface AssistantToolCallView {
  name: string;
  arguments: Record<string, unknown>;
  ok: boolean;
  content: string;
  ms: number;
}

/** A timer (GET /api/assistant/timers); a running one is cancelled with DELETE /api/assistant/timers/:id. */
export interface AssistantTimerView {
  id: string;
  label: string;
  /** When it rings, epoch ms. */
  dueAt: number;
  createdAt: number;
  /** Running ones first, then the recently ended. */
  state: 'running' | 'fired' | 'cancelled';
}

/** GET /api/assistant/timers: the running and recently ended timers (and their events, not shown here). */
export interface AssistantTimersAnswer {
  timers: AssistantTimerView[];
}
