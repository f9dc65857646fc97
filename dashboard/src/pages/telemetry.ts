import type { OverviewView, PlacementView, TelemetryPoint } from '../../../agent/dashboard-api/wire.js';
import { ApiError } from '../ui/api.js';
import { LineChart } from '../ui/chart.js';
import { card, h, notice } from '../ui/dom.js';
import type { Page, PageContext } from '../ui/page.js';

// The last hour from the agent's SQLite history, then live samples over a WebSocket appended to the same
// charts. Metric names decide the chart: cpu.coreN.load_pct, *temp*, mem.used_pct, slot.*.tokens_per_sec.

const WINDOW_MS = 60 * 60_000;

interface Group {
  title: string;
  unit: string;
  match: RegExp;
  /** Legend label from the metric name. */
  label: (metric: string) => string;
  bounds?: { yMin: number; yMax: number };
}

const GROUPS: Group[] = [
  {
    title: 'CPU per core',
    unit: '%',
    match: /^cpu\.core(\d+)\.load_pct$/,
    label: (m) => m.replace(/^cpu\.(core\d+)\..*$/, '$1'),
    bounds: { yMin: 0, yMax: 100 },
  },
  {
    title: 'Temperatures',
    unit: '°C',
    match: /temp/,
    label: (m) => m.replace(/^temp\./, '').replace(/_c$/, ''),
  },
  {
    title: 'Memory used',
    unit: '%',
    match: /^mem\.used_pct$/,
    label: () => 'used',
    bounds: { yMin: 0, yMax: 100 },
  },
  {
    title: 'Tokens per second',
    unit: 'tok/s',
    match: /^slot\..*\.tokens_per_sec$/,
    label: (m) => m.replace(/^slot\.(.*)\.tokens_per_sec$/, '$1'),
  },
];

/**
 * Why a chart may stay empty: no thermal zones on this board, or no model serving (tokens per second only
 * exist while a model answers requests). Read from the overview and the placement; either may be unavailable.
 */
async function emptyReasons(ctx: PageContext): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const [overview, placement] = await Promise.all([
    ctx.api.get<OverviewView>('/api/overview').catch(() => undefined),
    ctx.api.get<PlacementView>('/api/placement').catch(() => undefined),
  ]);
  if (overview && overview.thermal.length === 0)
    out.set('Temperatures', 'Not available on this board: it has no thermal zones (/sys/class/thermal).');
  const engineModels = (placement?.slotStates ?? []).filter((s) => s.servedBy !== undefined && s.servable);
  if (engineModels.length === 0) {
    const engine = overview?.engine;
    out.set(
      'Tokens per second',
      engine && !engine.available
        ? 'No model serving: the MNN engine is not available here (see Overview).'
        : 'No model serving: tokens per second appear once a slot serves a model (see Models & placement).',
    );
  } else {
    out.set('Tokens per second', 'No requests yet: measured as the serving models answer requests.');
  }
  return out;
}

export const telemetryPage: Page = async (ctx) => {
  let metrics: string[];
  try {
    metrics = (await ctx.api.get<{ metrics: string[] }>('/api/telemetry/metrics')).metrics;
  } catch (err) {
    if (err instanceof ApiError && err.status === 503) {
      return {
        element: h(
          'div',
          { class: 'page' },
          h('h1', {}, 'Telemetry'),
          notice('warn', 'Telemetry not running', err.message, 'telemetry-unavailable'),
        ),
      };
    }
    throw err;
  }
  const charts = new Map<Group, LineChart>(
    GROUPS.map((g) => [g, new LineChart(g.title, { unit: g.unit, windowMs: WINDOW_MS, ...g.bounds })]),
  );
  const groupOf = (metric: string) => GROUPS.find((g) => g.match.test(metric));
  // An empty chart says why it is empty, so nobody waits for temperatures a board cannot report.
  const reasons = await emptyReasons(ctx);
  for (const g of GROUPS) {
    const why = reasons.get(g.title);
    if (why) charts.get(g)!.emptyText = why;
  }
  const push = (metric: string, t: number, v: number) => {
    const g = groupOf(metric);
    if (g) charts.get(g)!.push(g.label(metric), t, v);
  };

  const wanted = metrics.filter((m) => groupOf(m) !== undefined);
  if (wanted.length > 0) {
    const q = new URLSearchParams({
      metrics: wanted.slice(0, 64).join(','),
      minutes: '60',
      maxPoints: '360',
    });
    const history = await ctx.api.get<{ series: Record<string, TelemetryPoint[]> }>(
      `/api/telemetry/history?${q}`,
    );
    for (const [metric, points] of Object.entries(history.series))
      for (const p of points) push(metric, p.t, p.mean);
  }

  const state = h('p', { class: 'sub', 'data-testid': 'live-state' }, 'Connecting to the live stream…');
  let closedByPage = false;
  const ws = new WebSocket(ctx.api.wsUrl('/api/telemetry/live'));
  ws.addEventListener('open', () => {
    state.textContent = 'Live';
  });
  ws.addEventListener('message', (event) => {
    const msg = JSON.parse(String(event.data)) as {
      type: string;
      t?: number;
      values?: Record<string, number>;
    };
    if (msg.type === 'sample' && msg.values && msg.t !== undefined)
      for (const [k, v] of Object.entries(msg.values)) push(k, msg.t, v);
  });
  ws.addEventListener('close', (event) => {
    if (closedByPage) return;
    state.replaceChildren(
      notice(
        'warn',
        'Live stream closed',
        event.reason || `The agent closed the stream (code ${event.code}). Reload to reconnect.`,
        'live-closed',
      ),
    );
  });

  const empty =
    wanted.length === 0
      ? h('p', { class: 'muted' }, 'No samples recorded yet; charts fill in as the agent samples.')
      : null;
  const grid = h('div', { class: 'grid charts' }, ...[...charts.values()].map((c) => c.element));
  requestAnimationFrame(() => {
    for (const c of charts.values()) c.draw();
  });
  return {
    element: h('div', { class: 'page' }, h('h1', {}, 'Telemetry'), state, empty, card('Last hour', grid)),
    dispose() {
      closedByPage = true;
      ws.close(1000, 'page closed');
    },
  };
};
