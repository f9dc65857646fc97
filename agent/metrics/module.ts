import { HttpError } from '../../lib/http-error.js';
import { bearerToken, constantTimeEqual } from '../http/auth.js';
import type { AgentContext, AgentModule } from '../module.js';
import { type MetricsSnapshot, metricFamilies } from './collect.js';
import { renderExposition } from './exposition.js';

// GET /metrics: the Prometheus text format, with the API's auth (the pairing token as a bearer, or a dashboard
// session) or, when `http.metricsToken` is set, that read-only token, which opens /metrics and nothing else
// (a scraper's config holds it; the pairing token can change the device).
//
// Nothing runs for it until a scrape arrives: the snapshot is read from what its owners keep anyway.

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface MetricsSources {
  /** Everything but the counters below, read at scrape time. */
  snapshot(ctx: AgentContext): Omit<MetricsSnapshot, 'counters'>;
  /** Subscribes to the events behind the counters; returns the removers. */
  watch(count: (what: 'fallbacks' | 'swaps' | 'reconnects') => void): Array<() => void>;
}

export function createMetricsModule(sources: MetricsSources): AgentModule {
  const counters = { fallbacks: 0, swaps: 0, reconnects: 0 };
  const removers: Array<() => void> = [];
  return {
    name: 'metrics',
    start(ctx: AgentContext) {
      const metricsToken = ctx.config.http.metricsToken;
      removers.push(...sources.watch((what) => counters[what]++));
      removers.push(
        ctx.router.route(
          'GET',
          '/metrics',
          (c) => {
            const bearer = bearerToken(c.req.headers.authorization);
            const readOnly =
              metricsToken !== undefined && bearer !== undefined && constantTimeEqual(bearer, metricsToken);
            if (!c.auth && !readOnly)
              throw new HttpError(
                401,
                'unauthorized',
                'GET /metrics needs the API bearer token or http.metricsToken',
                {
                  'WWW-Authenticate': 'Bearer realm="mnn-edge"',
                },
              );
            const body = renderExposition(metricFamilies({ ...sources.snapshot(ctx), counters }));
            c.res.writeHead(200, {
              'Content-Type': METRICS_CONTENT_TYPE,
              'Cache-Control': 'no-store',
              'Content-Length': Buffer.byteLength(body),
            });
            c.res.end(c.req.method === 'HEAD' ? undefined : body);
          },
          { auth: false },
        ),
      );
    },
    stop() {
      for (const r of removers.splice(0)) r();
    },
  };
}
