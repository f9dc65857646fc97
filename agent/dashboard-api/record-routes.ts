// What the agent keeps a record of, for the dashboard to read: the OTA jobs it ran and the tail of its log.
import { HttpError } from '../../lib/http-error.js';
import { isLogLevel } from '../../lib/log-tail.js';
import { intParam } from '../http/query.js';
import { type RouteKit, unavailable } from './route-kit.js';

export /** The OTA job list and the log tail. */
function registerRecordRoutes(kit: RouteKit): void {
  const { options, get } = kit;
  const { sources } = options;
  // ---- OTA ----
  get('/api/ota/jobs', (ctx) => {
    if (sources.ota === undefined) throw unavailable('ota', 'OTA is not enabled on this agent');
    ctx.json(200, { jobs: sources.ota.jobs(intParam(ctx.url, 'limit', { min: 1, max: 200, fallback: 50 })) });
  });

  // ---- logs ----
  get('/api/logs', (ctx) => {
    if (options.logTail === undefined)
      throw unavailable(
        'logs',
        'The in-memory log tail is not enabled; read the journal: journalctl -u mnn-edge',
      );
    const level = ctx.url.searchParams.get('level') ?? 'debug';
    if (!isLogLevel(level))
      throw new HttpError(
        400,
        'invalid_parameter',
        `Query parameter level must be one of debug, info, warn, error, got ${JSON.stringify(level)}`,
      );
    const after = ctx.url.searchParams.has('after')
      ? intParam(ctx.url, 'after', { min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 })
      : undefined;
    ctx.json(
      200,
      options.logTail.tail({
        limit: intParam(ctx.url, 'limit', { min: 1, max: 1000, fallback: 200 }),
        minLevel: level,
        ...(after !== undefined ? { after } : {}),
      }),
    );
  });
}
