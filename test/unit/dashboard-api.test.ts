import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import WebSocket from 'ws';
import { defaultConfig } from '../../agent/config/defaults.js';
import type { AgentConfig } from '../../agent/config/schema.js';
import { SampleHub } from '../../agent/dashboard-api/adapters.js';
import type { DashboardSources, PlacementView } from '../../agent/dashboard-api/ports.js';
import { createDashboardModule } from '../../agent/dashboard-api/routes.js';
import { detect } from '../../agent/detect/index.js';
import { createAgent } from '../../agent/main.js';
import type { SlotConstraints } from '../../agent/plan/types.js';
import { createMemoryLogger } from '../../lib/log.js';
import { LogTail } from '../../lib/log-tail.js';
import { socFixturesDir } from '../helpers/paths.js';
import { until } from '../helpers/until.js';

// The dashboard API through a real agent on loopback: auth, degraded states, validation messages, limits,
// the static files and the live telemetry socket. Only the sources behind the ports are test values.

const rock5b = join(socFixturesDir, 'rockchip-rk3588-rock5b');

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-dash-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function siteDir(t: ExecutionContext): string {
  const dir = join(tempDir(t), 'dist');
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(
    join(dir, 'index.html'),
    '<!doctype html><title>t</title><script src="assets/app.js"></script>',
  );
  writeFileSync(join(dir, 'assets', 'app.js'), `console.log(${JSON.stringify('x'.repeat(4000))});`);
  return dir;
}

async function start(
  t: ExecutionContext,
  sources: DashboardSources,
  opts: { http?: Partial<AgentConfig['http']>; distDir?: string; logTail?: LogTail } = {},
) {
  const dataDir = join(tempDir(t), 'data');
  const base = defaultConfig({});
  const config: AgentConfig = {
    ...base,
    dataDir,
    root: rock5b,
    http: { ...base.http, bind: '127.0.0.1', port: 0, ...opts.http },
  };
  const logger = createMemoryLogger();
  const module = createDashboardModule({
    sources,
    version: '1.2.3-test',
    distDir: opts.distDir ?? join(tempDir(t), 'missing'),
    ...(opts.logTail ? { logTail: opts.logTail } : {}),
  });
  const agent = createAgent(config, { logger, version: '1.2.3-test', modules: [module] });
  t.teardown(() => agent.stop('test teardown'));
  await agent.start();
  const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
  const url = `http://127.0.0.1:${agent.http.port}`;
  const auth = { Authorization: `Bearer ${token}` };
  return { agent, url, token, auth, module };
}

const baseSources = (): DashboardSources => ({
  capabilities: () => detect({ root: rock5b }),
  engine: () => ({ available: false, reason: 'the engine addon is not built' }),
});

test('the page is public, every API path needs credentials (401 with the agent’s message)', async (t) => {
  const { url, auth } = await start(t, baseSources(), { distDir: siteDir(t) });
  const page = await fetch(`${url}/`);
  t.is(page.status, 200);
  t.regex(page.headers.get('content-type') ?? '', /^text\/html/);
  t.regex(page.headers.get('content-security-policy') ?? '', /default-src 'self'/);
  t.is(page.headers.get('cache-control'), 'no-cache');

  for (const path of [
    '/api/overview',
    '/api/placement',
    '/api/models',
    '/api/telemetry/metrics',
    '/api/logs',
    '/api/workloads',
    '/api/limits',
    '/api/nope',
  ]) {
    const res = await fetch(`${url}${path}`);
    t.is(res.status, 401, path);
    t.is(((await res.json()) as { error: { code: string } }).error.code, 'unauthorized');
  }
  // A wrong token and a stale session each get their own answer; neither says which part was wrong.
  const wrong = await fetch(`${url}/api/overview`, { headers: { authorization: 'Bearer not-the-token' } });
  t.is(wrong.status, 401);
  t.is(wrong.headers.get('www-authenticate'), 'Bearer realm="mnn-edge", error="invalid_token"');
  t.deepEqual(await wrong.json(), {
    error: {
      code: 'invalid_token',
      message: 'The bearer token is not valid: compare it with the output of `mnn-edge token` on the device',
    },
  });
  const stale = await fetch(`${url}/api/overview`, { headers: { cookie: 'mnn_edge_session=old.value' } });
  t.like(await stale.json(), { error: { code: 'session_expired' } });
  const ok = await fetch(`${url}/api/overview`, { headers: auth });
  t.is(ok.status, 200);
});

test('static assets are served gzipped when accepted, with ETag revalidation, and unknown files are 404', async (t) => {
  const { url } = await start(t, baseSources(), { distDir: siteDir(t) });
  const res = await fetch(`${url}/assets/app.js`, { headers: { 'Accept-Encoding': 'gzip' } });
  t.is(res.status, 200);
  t.regex(await res.text(), /^console\.log/);
  const raw = await new Promise<{ encoding: string | undefined; body: Buffer; etag: string }>(
    (resolve, reject) => {
      import('node:http').then(({ get }) =>
        get(`${url}/assets/app.js`, { headers: { 'accept-encoding': 'gzip' } }, (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () =>
            resolve({
              encoding: r.headers['content-encoding'],
              body: Buffer.concat(chunks),
              etag: String(r.headers.etag),
            }),
          );
        }).on('error', reject),
      );
    },
  );
  t.is(raw.encoding, 'gzip');
  t.true(raw.body.length < 200);
  t.regex(gunzipSync(raw.body).toString(), /xxxx/);
  const again = await fetch(`${url}/assets/app.js`, { headers: { 'If-None-Match': raw.etag } });
  t.is(again.status, 304);
  const missing = await fetch(`${url}/assets/nope.js`);
  t.is(missing.status, 404);
  t.deepEqual(await missing.json(), {
    error: { code: 'not_found', message: 'No dashboard file assets/nope.js' },
  });
});

test('an unbuilt dashboard answers with a page that says how to build it, not a blank one', async (t) => {
  const { url } = await start(t, baseSources());
  const res = await fetch(`${url}/`);
  t.is(res.status, 503);
  t.regex(await res.text(), /Dashboard not built.*npm run build:dashboard/s);
});

test('overview of an agent on the ROCK 5B fixture names the board, the SoC and the NPU with evidence', async (t) => {
  const { url, auth } = await start(t, baseSources());
  const o = (await (await fetch(`${url}/api/overview`, { headers: auth })).json()) as {
    board: { model: { value: string } };
    soc: { family: { value: string } };
    accelerators: Array<{ kind: string; title: string; evidence: string[] }>;
    device: { version: string; uptimeS: number };
    engine: { available: boolean; reason: string };
    broker: { state: string; reason: string };
  };
  t.regex(o.board.model.value, /ROCK 5B/i);
  t.is(o.soc.family.value, 'rk3588');
  const npu = o.accelerators.find((a) => a.kind === 'rknpu');
  t.is(npu?.title, 'Rockchip NPU');
  t.true((npu?.evidence.length ?? 0) > 0);
  t.is(o.device.version, '1.2.3-test');
  t.deepEqual(o.engine, { available: false, reason: 'the engine addon is not built' });
  t.deepEqual(o.broker, {
    state: 'disabled',
    reason: 'The fleet (MQTT) module is not running on this agent',
  });
});

test('absent modules answer 503 with what is missing; no models gives the pull hint', async (t) => {
  const { url, auth } = await start(t, {
    ...baseSources(),
    models: { installed: () => [], installs: () => [] },
  });
  const placement = await fetch(`${url}/api/placement`, { headers: auth });
  t.is(placement.status, 503);
  t.deepEqual(await placement.json(), {
    error: {
      code: 'runtime_unavailable',
      message: 'The model runtime is not running on this agent, so nothing is placed',
    },
  });
  const tele = await fetch(`${url}/api/telemetry/metrics`, { headers: auth });
  t.is(tele.status, 503);
  const ota = await fetch(`${url}/api/ota/jobs`, { headers: auth });
  t.deepEqual(await ota.json(), {
    error: { code: 'ota_unavailable', message: 'OTA is not enabled on this agent' },
  });
  const models = (await (await fetch(`${url}/api/models`, { headers: auth })).json()) as {
    installed: unknown[];
    hint: string;
  };
  t.deepEqual(models.installed, []);
  t.regex(models.hint, /^No models installed\. Pull the first ones on the device with `mnn-edge models pull/);
  const w = (await (await fetch(`${url}/api/workloads`, { headers: auth })).json()) as {
    voice: { available: boolean; reason: string };
  };
  t.deepEqual(w.voice, {
    available: false,
    reason: 'The voice and vision workloads are not running on this agent',
  });
});

test('pin: validated field by field, passed to the runtime with the author; unknown slot 404; oversize 413', async (t) => {
  const calls: Array<[string, string, SlotConstraints | undefined, string]> = [];
  const view: PlacementView = {
    placement: undefined,
    serving: {},
    instances: [],
    fallbacks: [],
    pins: {},
    slotStates: [],
    pinOptions: [],
  };
  const { url, auth } = await start(
    t,
    {
      ...baseSources(),
      placement: {
        view: () => view,
        pin: async (slot, c, author) => void calls.push(['pin', slot, c, author]),
        unpin: async (slot, author) => void calls.push(['unpin', slot, undefined, author]),
        replan: async (reason) => void calls.push(['replan', '', undefined, reason]),
      },
    },
    { http: { maxUploadBytes: 2048 } },
  );
  const put = (slot: string, body: unknown) =>
    fetch(`${url}/api/placement/${slot}/pin`, {
      method: 'PUT',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  const expectError = async (res: Response, status: number, message: string) => {
    t.is(res.status, status);
    t.is(((await res.json()) as { error: { message: string } }).error.message, message);
  };
  // Which backends this board allows is the runtime's to say (runtime-module.test.ts); the form is checked here.
  await expectError(
    await put('voice.llm', { backend: 42 }),
    400,
    'backend must be a backend name (cpu, opencl, vulkan, cuda, metal, npu, hexagon)',
  );
  await expectError(await put('voice.llm', { threads: 0 }), 400, 'threads must be an integer from 1 to 64');
  await expectError(
    await put('voice.llm', { colour: 'red' }),
    400,
    'Unknown pin field "colour"; allowed: version, variant, backend, threads, precision, memory',
  );
  await expectError(
    await put('voice.llm', {}),
    400,
    'A pin needs at least one field: version, variant, backend, threads, precision, memory',
  );
  await expectError(await put('voice.bogus', { backend: 'cpu' }), 404, 'No slot named "voice.bogus"');
  await expectError(
    await put('voice.llm', { variant: 'x'.repeat(4000) }),
    413,
    'Request body exceeds the limit of 2048 bytes (http.maxUploadBytes)',
  );

  const ok = await put('voice.llm', { backend: 'opencl', threads: 4 });
  t.is(ok.status, 200);
  const del = await fetch(`${url}/api/placement/voice.llm/pin`, { method: 'DELETE', headers: auth });
  t.is(del.status, 200);
  t.is(calls.length, 2);
  t.deepEqual(calls[0]!.slice(0, 3), ['pin', 'voice.llm', { backend: 'opencl', threads: 4 }]);
  t.regex(calls[0]![3], /^dashboard \(bearer from 127\.0\.0\.1\)$/);
  t.is(calls[1]![0], 'unpin');
});

test('telemetry history validates its parameters with exact messages', async (t) => {
  const hub = new SampleHub();
  const { url, auth } = await start(t, {
    ...baseSources(),
    telemetry: {
      metrics: () => ['cpu.core0.load_pct'],
      history: (q) =>
        Object.fromEntries(q.metrics.map((m) => [m, [{ t: q.since, min: 1, mean: 2, max: 3 }]])),
      subscribe: (l) => hub.subscribe(l),
      latest: () => hub.latest(),
    },
  });
  const get = (q: string) => fetch(`${url}/api/telemetry/history?${q}`, { headers: auth });
  const bad = await get('minutes=5');
  t.is(bad.status, 400);
  t.is(
    ((await bad.json()) as { error: { message: string } }).error.message,
    'Query parameter metrics is required (comma-separated)',
  );
  const badMin = await get('metrics=a&minutes=0');
  t.is(
    ((await badMin.json()) as { error: { message: string } }).error.message,
    'Query parameter minutes must be an integer from 1 to 10080, got "0"',
  );
  const ok = (await (await get('metrics=cpu.core0.load_pct&minutes=5')).json()) as {
    series: Record<string, unknown[]>;
  };
  t.is(ok.series['cpu.core0.load_pct']?.length, 1);
});

function openWs(
  url: string,
  headers: Record<string, string>,
): Promise<{ ws: WebSocket; messages: unknown[]; closed: Promise<{ code: number; reason: string }> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const messages: unknown[] = [];
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on('close', (code, reason) => r({ code, reason: String(reason) })),
    );
    ws.on('message', (d) => messages.push(JSON.parse(String(d))));
    ws.on('open', () => resolve({ ws, messages, closed }));
    ws.on('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.on('error', reject);
  });
}

test('live telemetry: hello, latest and new samples; sessions over the limit closed with 4429 and the reason', async (t) => {
  const hub = new SampleHub();
  hub.publish({ t: 1000, values: { 'cpu.core0.load_pct': 12 } });
  const { url, auth } = await start(
    t,
    {
      ...baseSources(),
      telemetry: {
        metrics: () => ['cpu.core0.load_pct'],
        history: () => ({}),
        subscribe: (l) => hub.subscribe(l),
        latest: () => hub.latest(),
      },
    },
    { http: { maxSessions: 1 } },
  );
  const wsUrl = `${url.replace('http', 'ws')}/api/telemetry/live`;
  await t.throwsAsync(openWs(wsUrl, {}), { message: 'HTTP 401' });
  const first = await openWs(wsUrl, auth);
  const second = await openWs(wsUrl, auth);
  const refused = await second.closed;
  t.is(refused.code, 4429);
  t.is(
    refused.reason,
    'Too many concurrent sessions: 1 of 1 are open (http.maxSessions); close one and retry',
  );
  hub.publish({ t: 2000, values: { 'cpu.core0.load_pct': 50, 'mem.used_pct': 40 } });
  await until(() => first.messages.length >= 3, 'the second sample');
  t.deepEqual(first.messages, [
    { type: 'hello', metrics: ['cpu.core0.load_pct'] },
    { type: 'sample', t: 1000, values: { 'cpu.core0.load_pct': 12 } },
    { type: 'sample', t: 2000, values: { 'cpu.core0.load_pct': 50, 'mem.used_pct': 40 } },
  ]);
  first.ws.close();
  await first.closed;
  // The slot is free again once the first socket has gone (the server may see the close a moment later).
  let third = await openWs(wsUrl, auth);
  for (let tries = 1; ; tries++) {
    const ws = third.ws;
    const helloOrClose = await Promise.race([
      third.closed,
      new Promise<undefined>((r) =>
        third.messages.length ? r(undefined) : ws.once('message', () => r(undefined)),
      ),
    ]);
    if (!helloOrClose) break;
    t.is(helloOrClose.code, 4429);
    if (tries === 100) t.fail('the slot stayed taken after the first socket closed');
    await new Promise((r) => setTimeout(r, 20));
    third = await openWs(wsUrl, auth);
  }
  t.like(third.messages[0], { type: 'hello' });
  third.ws.close();
  await third.closed;
});

test('live telemetry: a client flooding messages is closed with 4408', async (t) => {
  const hub = new SampleHub();
  const { url, auth } = await start(t, {
    ...baseSources(),
    telemetry: {
      metrics: () => [],
      history: () => ({}),
      subscribe: (l) => hub.subscribe(l),
      latest: () => undefined,
    },
  });
  const c = await openWs(`${url.replace('http', 'ws')}/api/telemetry/live`, auth);
  for (let i = 0; i < 500; i++) c.ws.send(JSON.stringify({ type: 'subscribe', metrics: ['x'] }));
  const closed = await c.closed;
  t.is(closed.code, 4408);
  t.is(closed.reason, 'Message rate over 50/s (burst 100) on this connection');
});

test('logs: bounded tail filtered by level and polled after a sequence number', async (t) => {
  const tail = new LogTail({ maxLines: 3 });
  const { url, auth } = await start(t, baseSources(), { logTail: tail });
  for (const [level, msg] of [
    ['info', 'one'],
    ['debug', 'two'],
    ['warn', 'three'],
    ['error', 'four'],
  ] as const) {
    tail.write(JSON.stringify({ ts: '2026-01-01T00:00:00.000Z', level, ns: 'mnn-edge:test', msg }));
  }
  const res = (await (await fetch(`${url}/api/logs?level=info`, { headers: auth })).json()) as {
    records: Array<{ msg: string }>;
    last: number;
  };
  t.deepEqual(
    res.records.map((r) => r.msg),
    ['three', 'four'],
  );
  t.is(res.last, 4);
  const after = (await (await fetch(`${url}/api/logs?after=4`, { headers: auth })).json()) as {
    records: unknown[];
  };
  t.deepEqual(after.records, []);
  const bad = await fetch(`${url}/api/logs?level=loud`, { headers: auth });
  t.is(
    ((await bad.json()) as { error: { message: string } }).error.message,
    'Query parameter level must be one of debug, info, warn, error, got "loud"',
  );
});
