// The vision socket's messages as the dashboard uses them (server side: agent/workloads, docs/WORKLOADS.md).
// A question is a JSON `ask` followed by one binary frame with the JPEG; watch mode sends `watch` once and
// then a JPEG every interval; answers stream back as deltas, watch results as timeline events.

export type VisionClientMessage =
  | { type: 'ask'; question: string; mime: 'image/jpeg'; bytes: number }
  | { type: 'watch'; prompt: string; intervalMs: number }
  | { type: 'frame'; mime: 'image/jpeg'; bytes: number }
  | { type: 'unwatch' };

export type VisionServerEvent =
  | { type: 'ready' }
  | { type: 'answer-delta'; id: number; text: string }
  | { type: 'answer'; id: number; text: string; latencyMs?: number }
  | {
      type: 'watch-event';
      t: number;
      text: string;
      changed?: boolean;
      trigger?: 'first' | 'scene-change' | 'interval';
      latencyMs?: number;
      /** PNG data URL of the frame that was asked about. */
      thumbnail?: string;
    }
  | { type: 'error'; code?: string; message: string };

export function parseVisionEvent(text: string): VisionServerEvent | undefined {
  try {
    const v = JSON.parse(text) as { type?: unknown };
    return typeof v === 'object' && v !== null && typeof v.type === 'string'
      ? (v as VisionServerEvent)
      : undefined;
  } catch {
    return undefined;
  }
}
