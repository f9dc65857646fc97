// The dashboard's telemetry: the metrics sampled, their history, and a socket that pushes each sample live
// (a session like the voice and vision sockets, rate-limited, skipping samples while the browser is backed up).
import { MnnEdgeError } from '../../lib/errors.js';
import { HttpError } from '../../lib/http-error.js';
import { intParam, listParam } from '../http/query.js';
import { MessageRateLimiter, WS_CLOSE } from '../http/session-limits.js';
import type { TelemetrySample } from './ports.js';
import { type RouteKit, unavailable } from './route-kit.js';

export /** The telemetry metrics, history and the live sample socket. */
function registerTelemetryRoutes(kit: RouteKit): void {
  const { options, get, removers, sessions, wsRate, liveSockets } = kit;
  const { router, sources, clock } = options;
  const telemetry = () => {
    if (sources.telemetry === undefined)
      throw unavailable('telemetry', 'Telemetry sampling is not running on this agent');
    return sources.telemetry;
  };
  get('/api/telemetry/metrics', (ctx) => ctx.json(200, { metrics: telemetry().metrics() }));
  get('/api/telemetry/history', (ctx) => {
    const port = telemetry();
    const metrics = listParam(ctx.url, 'metrics');
    const now = clock.nowMs();
    const minutes = intParam(ctx.url, 'minutes', { min: 1, max: 7 * 24 * 60, fallback: 60 });
    const maxPoints = intParam(ctx.url, 'maxPoints', { min: 1, max: 2000, fallback: 360 });
    try {
      ctx.json(200, {
        since: now - minutes * 60_000,
        until: now,
        series: port.history({ metrics, since: now - minutes * 60_000, until: now, maxPoints }),
      });
    } catch (err) {
      if (err instanceof MnnEdgeError && err.code === 'EINVAL')
        throw new HttpError(400, 'invalid_parameter', err.message);
      throw err;
    }
  });
  removers.push(
    router.upgrade('/api/telemetry/live', (ws, up) => {
      if (sources.telemetry === undefined) {
        ws.close(1011, 'Telemetry sampling is not running on this agent');
        return;
      }
      const release = sessions.tryAcquire({
        kind: 'dashboard telemetry',
        who: up.req.socket.remoteAddress ?? 'unknown',
      });
      if (release === undefined) {
        ws.close(WS_CLOSE.tooManySessions, sessions.refusal().slice(0, 120));
        return;
      }
      liveSockets.add(ws);
      const limiter = new MessageRateLimiter(clock, wsRate, wsRate * 2);
      let filter: Set<string> | undefined;
      const send = (sample: TelemetrySample) => {
        // A slow browser must not make the agent queue samples without bound: skip while the socket is backed up.
        if (ws.bufferedAmount > 256 * 1024) return;
        const values = filter
          ? Object.fromEntries(Object.entries(sample.values).filter(([k]) => filter!.has(k)))
          : sample.values;
        ws.send(JSON.stringify({ type: 'sample', t: sample.t, values }));
      };
      const unsubscribe = sources.telemetry.subscribe(send);
      ws.send(JSON.stringify({ type: 'hello', metrics: sources.telemetry.metrics() }));
      const latest = sources.telemetry.latest();
      if (latest) send(latest);
      ws.on('message', (data, isBinary) => {
        if (!limiter.take()) {
          ws.close(WS_CLOSE.rateLimited, limiter.describe().slice(0, 120));
          return;
        }
        if (isBinary) return;
        try {
          const msg = JSON.parse(String(data)) as { type?: unknown; metrics?: unknown };
          if (msg.type === 'subscribe' && Array.isArray(msg.metrics)) {
            filter = new Set(msg.metrics.filter((m): m is string => typeof m === 'string').slice(0, 256));
          }
        } catch {
          ws.send(
            JSON.stringify({
              type: 'error',
              message: 'Expected a JSON message like {"type":"subscribe","metrics":[…]}',
            }),
          );
        }
      });
      ws.on('close', () => {
        unsubscribe();
        release();
        liveSockets.delete(ws);
      });
    }),
  );
}
