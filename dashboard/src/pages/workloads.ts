import type { EngineStatus, WorkloadStatus } from '../../../agent/dashboard-api/wire.js';
import { notice } from '../ui/dom.js';

// Voice and Vision both start by asking whether they can run, and both explain it the same way when not.

export interface WorkloadsResponse {
  engine: EngineStatus;
  voice: WorkloadStatus;
  vision: WorkloadStatus & { cameraStreamPath?: string };
}

export interface Limits {
  maxUploadBytes: number;
  maxWsMessageBytes: number;
  maxSessions: number;
  activeSessions: number;
  /** Who holds each slot: `dashboard voice`, `wyoming transcribe`, … and the client's address. */
  sessionHolders: Array<{ kind: string; who?: string; sinceMs: number }>;
  wsMessagesPerSecond: number;
}

export function unavailableNotice(
  what: 'Voice' | 'Vision',
  res: WorkloadsResponse,
  status: WorkloadStatus,
): HTMLElement | undefined {
  if (!res.engine.available) {
    return notice(
      'warn',
      'Engine not available',
      `${what} needs the MNN engine, which is not available here: ${res.engine.reason}`,
      'engine-unavailable',
    );
  }
  if (!status.available)
    return notice('warn', `${what} not available`, status.reason, `${what.toLowerCase()}-unavailable`);
  return undefined;
}
