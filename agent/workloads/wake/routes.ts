// The wake word on the dashboard: `GET /api/voice/wake` says whether a wake model serves and with which keywords
// and rules; the socket `/ws/voice/wake` streams what the wake streams score (the Voice page's chart): first
// `hello` with the keywords and the recent frames and detections, then `frame`, `detection` and `keywords` (a
// threshold changed in the settings) as they happen. The socket only sends; it holds one of the agent's
// live sessions, as the other live sockets do.
import type { WebSocket } from 'ws';
import type { Clock } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import type { HttpRouter } from '../../http/router.js';
import { MessageRateLimiter, type SessionLimiter, WS_CLOSE } from '../../http/session-limits.js';
import { registerClipRoutes } from './clip-routes.js';
import type { WakeClipStore } from './clips.js';
import type { ResolvedKeyword } from './model.js';
import { keywordView, type WakeKeywordView, type WakeMonitor } from './monitor.js';

export const WAKE_WS_PATH = '/ws/voice/wake';

/** A socket further behind than this skips frames rather than queue them without bound. */
const MAX_BUFFERED_BYTES = 256 * 1024;

export interface WakeRoutesDeps {
  router: HttpRouter;
  monitor: WakeMonitor;
  /** The keywords of the model on voice.wake with the configured rules; throws with the reason when none. */
  keywords(): ResolvedKeyword[];
  sessions: SessionLimiter;
  messagesPerSecond: number;
  clock: Clock;
  /** The detection clips when voice.wake.clips is on. */
  clips?: WakeClipStore;
}

export type WakeStatus =
  | { available: true; keywords: WakeKeywordView[]; livePath: string }
  | { available: false; reason: string };

export function wakeStatus(keywords: () => ResolvedKeyword[]): WakeStatus {
  try {
    return { available: true, keywords: keywords().map(keywordView), livePath: WAKE_WS_PATH };
  } catch (err) {
    return { available: false, reason: errorMessage(err) };
  }
}

export function registerWakeRoutes(deps: WakeRoutesDeps): Array<() => void> {
  return [
    deps.router.route('GET', '/api/voice/wake', (ctx) => ctx.json(200, wakeStatus(deps.keywords))),
    deps.router.upgrade(WAKE_WS_PATH, (ws, up) => attachWakeSocket(ws, deps, up.req.socket.remoteAddress)),
    ...registerClipRoutes(deps.router, deps.clips),
  ];
}

function attachWakeSocket(ws: WebSocket, deps: WakeRoutesDeps, remote: string | undefined): void {
  const release = deps.sessions.tryAcquire({ kind: 'dashboard wake scores', who: remote ?? 'unknown' });
  if (!release) {
    ws.close(WS_CLOSE.tooManySessions, deps.sessions.refusal().slice(0, 120));
    return;
  }
  const rate = new MessageRateLimiter(deps.clock, deps.messagesPerSecond, deps.messagesPerSecond * 2);
  const send = (msg: Record<string, unknown>, droppable: boolean) => {
    if (ws.readyState !== ws.OPEN) return;
    if (droppable && ws.bufferedAmount > MAX_BUFFERED_BYTES) return;
    ws.send(JSON.stringify(msg));
  };
  // The model's keywords as configured now, even before any stream has run (a page opened on an idle board).
  const status = wakeStatus(deps.keywords);
  const snapshot = deps.monitor.snapshot();
  send(
    {
      type: 'hello',
      keywords: status.available ? status.keywords : snapshot.keywords,
      frames: snapshot.frames,
      detections: snapshot.detections,
      ...(status.available ? {} : { unavailable: status.reason }),
    },
    false,
  );
  const off = deps.monitor.subscribe((e) => {
    if (e.type === 'frame') send({ type: 'frame', ...e.frame }, true);
    else if (e.type === 'detection') send({ type: 'detection', ...e.detection }, false);
    else if (e.type === 'keywords') send({ type: 'keywords', keywords: e.keywords }, false);
    else send({ type: 'clips' }, false);
  });
  ws.on('message', () => {
    if (!rate.take()) ws.close(WS_CLOSE.rateLimited, rate.describe().slice(0, 120));
  });
  ws.on('close', () => {
    off();
    release();
  });
}
