import type { Summary } from '../telemetry/aggregate.js';
import type { OutboxStats } from '../telemetry/outbox.js';
import type { HistogramValue, Labels, MetricFamily } from './exposition.js';

// What /metrics says, gathered only when it is scraped: every number here is already kept by its owner (the
// runtime's counters and instance table, the outbox, the broker link, the OTA journal, telemetry's last sample).
// The few counters that exist only for scrapers (fallbacks, swaps, reconnects) are bumped by events that happen
// anyway. docs/METRICS.md lists every name; test/integration/metrics.test.ts holds code and table together.

export interface SlotView {
  slot: string;
  model?: string;
  backend?: string;
  requests: number;
}

export interface SlotDistribution {
  slot: string;
  requests: number;
  errorsByReason: Record<string, number>;
  ttft: HistogramValue;
  decodeTps: HistogramValue;
}

export interface HostView {
  key: string;
  modelId: string;
  status: string;
  rssBytes: number;
  load?: { ms: number };
}

export interface MetricsSnapshot {
  version: string;
  slots: readonly SlotView[];
  distributions: readonly SlotDistribution[];
  queueDepths: Readonly<Record<string, number>>;
  hosts: readonly HostView[];
  counters: { fallbacks: number; swaps: number; reconnects: number };
  outbox?: OutboxStats;
  mqtt?: { connected: boolean };
  otaJobs: Readonly<Record<string, number>>;
  /** telemetry's last interval (cpu.load_pct, mem.used_bytes, temp.<zone>_c …). */
  telemetry?: Readonly<Record<string, Summary>>;
  settingsRevision?: number;
  /** The acting assistant's tool calls since start, per tool and outcome. */
  toolCalls?: ReadonlyArray<{ tool: string; outcome: string; count: number }>;
}

export const HOST_STATES = [
  'starting',
  'loading',
  'warming',
  'ready',
  'draining',
  'stopping',
  'failed',
] as const;
export const OTA_STATES_SEEN = 'as recorded in the OTA journal';

const gauge = (name: string, help: string, samples: MetricFamily['samples']): MetricFamily => ({
  name,
  help,
  type: 'gauge',
  samples,
});
const counter = (name: string, help: string, samples: MetricFamily['samples']): MetricFamily => ({
  name,
  help,
  type: 'counter',
  samples,
});
const one = (value: number, labels?: Labels) => (labels ? { labels, value } : { value });

function slotFamilies(s: MetricsSnapshot): MetricFamily[] {
  const dist = new Map(s.distributions.map((d) => [d.slot, d]));
  const slots = [...new Set([...s.slots.map((x) => x.slot), ...dist.keys()])].sort();
  return [
    counter(
      'mnn_edge_slot_requests_total',
      'Requests a slot has served (generations, speech, forwards) since the agent started.',
      slots.map((slot) =>
        one(dist.get(slot)?.requests ?? s.slots.find((x) => x.slot === slot)?.requests ?? 0, { slot }),
      ),
    ),
    counter(
      'mnn_edge_slot_errors_total',
      'Failed requests per slot by reason (backend, crash, timeout, cancelled, error …).',
      slots.flatMap((slot) =>
        Object.entries(dist.get(slot)?.errorsByReason ?? {}).map(([reason, n]) => one(n, { slot, reason })),
      ),
    ),
    {
      name: 'mnn_edge_slot_ttft_seconds',
      help: 'Time to first token per generation.',
      type: 'histogram',
      samples: [...dist.values()].map((d) => ({ labels: { slot: d.slot }, histogram: d.ttft })),
    },
    {
      name: 'mnn_edge_slot_decode_tokens_per_second',
      help: 'Decode speed per generation, tokens per second.',
      type: 'histogram',
      samples: [...dist.values()].map((d) => ({ labels: { slot: d.slot }, histogram: d.decodeTps })),
    },
    gauge(
      'mnn_edge_slot_queue_depth',
      'Requests waiting for the slot (its admission gate).',
      slots.map((slot) => one(s.queueDepths[slot] ?? 0, { slot })),
    ),
    gauge(
      'mnn_edge_slot_backend_info',
      'What serves each slot now: its model and backend (value 1).',
      s.slots
        .filter((x) => x.model)
        .map((x) => one(1, { slot: x.slot, model: x.model ?? '', backend: x.backend ?? 'builtin' })),
    ),
  ];
}

function hostFamilies(s: MetricsSnapshot): MetricFamily[] {
  return [
    gauge(
      'mnn_edge_engine_host_resident_memory_bytes',
      'Resident memory of each engine host process.',
      s.hosts.map((h) => one(h.rssBytes, { instance: h.key, model: h.modelId })),
    ),
    gauge(
      'mnn_edge_engine_host_state',
      "Each engine host's state (1 for the current one).",
      s.hosts.flatMap((h) =>
        HOST_STATES.map((st) => one(h.status === st ? 1 : 0, { instance: h.key, state: st })),
      ),
    ),
    gauge(
      'mnn_edge_engine_host_load_seconds',
      'How long the engine host took to load its model.',
      s.hosts.filter((h) => h.load).map((h) => one((h.load?.ms ?? 0) / 1000, { instance: h.key })),
    ),
    counter(
      'mnn_edge_runtime_fallbacks_total',
      'Slots moved down their fallback chain after a backend failed.',
      [one(s.counters.fallbacks)],
    ),
    counter('mnn_edge_runtime_swaps_total', 'Slots switched to another instance (hot swaps, replans).', [
      one(s.counters.swaps),
    ]),
  ];
}

function fleetFamilies(s: MetricsSnapshot): MetricFamily[] {
  const o = s.outbox;
  return [
    gauge(
      'mnn_edge_telemetry_outbox_messages',
      'Telemetry messages waiting in the outbox.',
      o ? [one(o.queued)] : [],
    ),
    gauge('mnn_edge_telemetry_outbox_bytes', 'Bytes waiting in the outbox.', o ? [one(o.queuedBytes)] : []),
    gauge(
      'mnn_edge_telemetry_outbox_uncommitted',
      'Telemetry messages made but not yet committed: what a power cut now would lose.',
      o ? [one(o.pending)] : [],
    ),
    gauge(
      'mnn_edge_telemetry_last_seq',
      'Sequence number of the newest telemetry message made (committed or not).',
      o ? [one(o.nextSeq - 1)] : [],
    ),
    counter(
      'mnn_edge_telemetry_outbox_dropped_total',
      'Telemetry messages dropped by reason (expired, overflow, disk full).',
      o ? Object.entries(o.dropped).map(([reason, n]) => one(n, { reason })) : [],
    ),
    gauge(
      'mnn_edge_mqtt_connected',
      '1 while connected to the fleet broker.',
      s.mqtt ? [one(s.mqtt.connected ? 1 : 0)] : [],
    ),
    counter(
      'mnn_edge_mqtt_reconnects_total',
      'Connections to the broker after the first.',
      s.mqtt ? [one(s.counters.reconnects)] : [],
    ),
    gauge(
      'mnn_edge_ota_jobs',
      'OTA jobs in the device journal by state.',
      Object.entries(s.otaJobs).map(([state, n]) => one(n, { state })),
    ),
  ];
}

function boardFamilies(s: MetricsSnapshot): MetricFamily[] {
  const t = s.telemetry ?? {};
  const last = (k: string) => t[k]?.mean;
  const temps = Object.entries(t).filter(([k]) => /^temp\..+_c$/.test(k));
  const cpu = last('cpu.load_pct');
  const used = last('mem.used_bytes');
  const avail = last('mem.available_bytes');
  return [
    gauge(
      'mnn_edge_board_temperature_celsius',
      'Thermal zones, mean over the last telemetry interval.',
      temps.map(([k, v]) => one(v.mean, { zone: k.slice('temp.'.length, -'_c'.length) })),
    ),
    gauge(
      'mnn_edge_board_cpu_usage_ratio',
      'CPU busy share (0-1), mean over the last telemetry interval.',
      cpu === undefined ? [] : [one(cpu / 100)],
    ),
    gauge(
      'mnn_edge_board_memory_used_bytes',
      'Memory in use, mean over the last telemetry interval.',
      used === undefined ? [] : [one(used)],
    ),
    gauge(
      'mnn_edge_board_memory_available_bytes',
      'MemAvailable, mean over the last telemetry interval.',
      avail === undefined ? [] : [one(avail)],
    ),
  ];
}

export function metricFamilies(s: MetricsSnapshot): MetricFamily[] {
  return [
    gauge('mnn_edge_build_info', 'The agent version (value 1).', [one(1, { version: s.version })]),
    gauge(
      'mnn_edge_settings_revision',
      'Revision of the run-time settings overlay.',
      s.settingsRevision === undefined ? [] : [one(s.settingsRevision)],
    ),
    ...slotFamilies(s),
    ...hostFamilies(s),
    ...fleetFamilies(s),
    ...boardFamilies(s),
    counter(
      'mnn_edge_tool_calls_total',
      "The assistant's tool calls by tool and outcome (ok, error, timeout, unknown-tool, bad-arguments, cancelled).",
      (s.toolCalls ?? []).map((c) => one(c.count, { tool: c.tool, outcome: c.outcome })),
    ),
  ];
}
