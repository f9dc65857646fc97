import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { defaultConfig } from '../../agent/config/defaults.js';
import { createAgent } from '../../agent/main.js';
import { HOST_STATES, type MetricsSnapshot, metricFamilies } from '../../agent/metrics/collect.js';
import { renderExposition } from '../../agent/metrics/exposition.js';
import { createMetricsModule, METRICS_CONTENT_TYPE } from '../../agent/metrics/module.js';
import { SLOT_NAMES } from '../../agent/plan/types.js';
import { DECODE_TPS_BUCKETS, TTFT_BUCKETS_S } from '../../agent/runtime/serving/serving.js';
import { Histogram } from '../../lib/histogram.js';
import { createMemoryLogger } from '../../lib/log.js';
import { documentedFamilies, parseExposition as parse } from '../helpers/protocol-doc.js';

// /metrics parsed by a real exposition-format parser from the npm registry, every name checked against the table
// in docs/METRICS.md (both ways) and Prometheus' naming conventions; then over HTTP with its two credentials.

const documented = documentedFamilies();

function hist(bounds: number[], values: number[]) {
  const h = new Histogram(bounds);
  for (const v of values) h.observe(v);
  return h.snapshot();
}

/** A busy board: a slot entry for every slot plus two shared ones on a second instance, hosts, fleet, OTA. */
function busySnapshot(): MetricsSnapshot {
  const slots = [...SLOT_NAMES, 'voice.llm', 'vision.vlm'].map((slot, i) => ({
    slot,
    model: `model-${i}@1.0.0`,
    backend: i % 2 ? 'opencl' : 'cpu',
    requests: 10 * i,
  }));
  return {
    version: '0.1.0',
    slots,
    distributions: SLOT_NAMES.map((slot, i) => ({
      slot,
      requests: 10 * i,
      errorsByReason: (slot === 'voice.llm' ? { backend: 1, cancelled: 2 } : {}) as Record<string, number>,
      ttft: hist(TTFT_BUCKETS_S, [0.08, 0.3, 1.2, 45]),
      decodeTps: hist(DECODE_TPS_BUCKETS, [8.5, 22, 400]),
    })),
    queueDepths: Object.fromEntries(SLOT_NAMES.map((s) => [s, 1])),
    hosts: SLOT_NAMES.map((_slot, i) => ({
      key: `model-${i}@1.0.0/int4|cpu "t=4"`,
      modelId: `model-${i}`,
      status: HOST_STATES[i % HOST_STATES.length]!,
      rssBytes: 512 * 1024 * 1024,
      load: { ms: 1234 },
    })),
    counters: { fallbacks: 1, swaps: 3, reconnects: 2 },
    outbox: {
      queued: 5,
      queuedBytes: 2048,
      pending: 0,
      dropped: { expired: 1, overflow: 0, diskFull: 0 },
      degraded: false,
      nextSeq: 9,
    },
    mqtt: { connected: true },
    otaJobs: { committed: 2, 'rolled-back': 1 },
    telemetry: {
      'cpu.load_pct': { min: 1, mean: 12.5, max: 30, n: 6 },
      'mem.used_bytes': { min: 1, mean: 2e9, max: 3e9, n: 6 },
      'mem.available_bytes': { min: 1, mean: 6e9, max: 7e9, n: 6 },
      'temp.cpu-thermal_c': { min: 40, mean: 45.5, max: 50, n: 6 },
    },
    settingsRevision: 4,
    toolCalls: [
      { tool: 'set_timer', outcome: 'ok', count: 3 },
      { tool: 'ha_turn_on', outcome: 'timeout', count: 1 },
    ],
  };
}

test('every family parses, follows the naming conventions and is in docs/METRICS.md; every documented name is produced', (t) => {
  const text = renderExposition(metricFamilies(busySnapshot()));
  const families = parse(text);
  const names = families.map((f) => f.name);
  t.deepEqual([...names].sort(), [...documented.keys()].sort());
  for (const f of families) {
    t.is(f.type.toLowerCase(), documented.get(f.name) ?? '', `${f.name}: type`);
    t.regex(f.name, /^mnn_edge_[a-z0-9_]+$/);
    if (f.type === 'COUNTER') t.regex(f.name, /_total$/, `${f.name}: counters end in _total`);
    else t.notRegex(f.name, /_total$/, `${f.name}: only counters end in _total`);
    t.true(f.help.length > 10, `${f.name}: help`);
  }
  // This parser folds a histogram's labelled series into one (it keeps buckets only for unlabelled ones), so one
  // slot's series is parsed on its own, with its slot label taken off.
  const oneSlot = text
    .split('\n')
    .filter((l) =>
      l.startsWith('# ')
        ? l.includes('mnn_edge_slot_ttft_seconds')
        : l.startsWith('mnn_edge_slot_ttft_seconds') && l.includes('slot="voice.llm"'),
    )
    .map((l) => l.replace(/slot="voice\.llm",?/, '').replace('{}', ''))
    .join('\n');
  const llm = parse(`${oneSlot}\n`)[0]!.metrics[0]!;
  t.deepEqual(llm.buckets, {
    '0.05': '0',
    '0.1': '1',
    '0.25': '1',
    '0.5': '2',
    '1': '2',
    '2': '3',
    '5': '3',
    '10': '3',
    '30': '3',
    '+Inf': '4',
  });
  t.is(llm.count, '4');
  const host = families.find((f) => f.name === 'mnn_edge_engine_host_state')!;
  // A label value with a quote and a pipe survives the round trip.
  t.is(host.metrics[0]!.labels!['instance'], 'model-0@1.0.0/int4|cpu "t=4"');
  const errors = families.find((f) => f.name === 'mnn_edge_slot_errors_total')!;
  t.deepEqual(
    errors.metrics.map((m) => [m.labels!['slot'], m.labels!['reason'], m.value]),
    [
      ['voice.llm', 'backend', '1'],
      ['voice.llm', 'cancelled', '2'],
    ],
  );
});

test('series without data are left out, never reported as 0', (t) => {
  const bare: MetricsSnapshot = {
    version: '0.1.0',
    slots: [],
    distributions: [],
    queueDepths: {},
    hosts: [],
    counters: { fallbacks: 0, swaps: 0, reconnects: 0 },
    otaJobs: {},
  };
  const names = parse(renderExposition(metricFamilies(bare))).map((f) => f.name);
  t.false(names.includes('mnn_edge_mqtt_connected'));
  t.false(names.includes('mnn_edge_board_cpu_usage_ratio'));
  t.true(names.includes('mnn_edge_runtime_swaps_total'));
});

async function agentWithMetrics(t: ExecutionContext, metricsToken?: string) {
  const dataDir = mkdtempSync(join(tmpdir(), 'mnn-edge-metrics-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const base = defaultConfig({});
  const config = {
    ...base,
    dataDir,
    http: { ...base.http, bind: '127.0.0.1', port: 0, ...(metricsToken ? { metricsToken } : {}) },
  };
  const agent = createAgent(config, {
    logger: createMemoryLogger(),
    modules: [createMetricsModule({ snapshot: () => busySnapshot(), watch: () => [] })],
  });
  await agent.start();
  t.teardown(() => agent.stop());
  const url = `http://127.0.0.1:${agent.http.port}`;
  const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
  return { url, token };
}

test('GET /metrics: the API bearer token or the read-only metrics token; the latter opens nothing else', async (t) => {
  const metricsToken = 'scrape-only-token-0123456789';
  const { url, token } = await agentWithMetrics(t, metricsToken);
  const none = await fetch(`${url}/metrics`);
  t.is(none.status, 401);
  t.is(none.headers.get('www-authenticate'), 'Bearer realm="mnn-edge"');
  const wrong = await fetch(`${url}/metrics`, { headers: { Authorization: 'Bearer nope-nope-nope-nope' } });
  t.is(wrong.status, 401);
  const scraper = await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${metricsToken}` } });
  t.is(scraper.status, 200);
  t.is(scraper.headers.get('content-type'), METRICS_CONTENT_TYPE);
  t.true(parse(await scraper.text()).some((f) => f.name === 'mnn_edge_slot_requests_total'));
  const api = await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
  t.is(api.status, 200);
  const elsewhere = await fetch(`${url}/api/session`, {
    headers: { Authorization: `Bearer ${metricsToken}` },
  });
  t.is(elsewhere.status, 401);
});
