import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import WebSocket from 'ws';
import { defaultConfig } from '../../agent/config/defaults.js';
import type { AgentConfig } from '../../agent/config/schema.js';
import { planPolicyFromConfig } from '../../agent/config/sections/slots.js';
import { hubPortFrom } from '../../agent/dashboard-api/hub-port.js';
import type { DashboardSources } from '../../agent/dashboard-api/ports.js';
import { createDashboardModule } from '../../agent/dashboard-api/routes.js';
import { detect } from '../../agent/detect/index.js';
import type { RecommendContext } from '../../agent/installed-models/hub-catalog.js';
import { createAgent } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { type DownloadPolicy, defaultDownloadPolicy } from '../../lib/download/downloader.js';
import { createMemoryLogger } from '../../lib/log.js';
import { hubClient, hubSettings } from '../../models/hub/clients.js';
import { HubPullJobs, type PullJobView } from '../../models/hub/pull-jobs.js';
import { ModelStore } from '../../models/index.js';
import {
  memoryFile,
  repoFromDir,
  type Standin,
  startHuggingFaceStandin,
  startModelScopeStandin,
} from '../helpers/hub-standins.js';
import { modelFixturesDir, socFixturesDir } from '../helpers/paths.js';

// The dashboard's "Get models" routes through a real agent on loopback, against the loopback hub stand-ins:
// validation and limits, auth, search and recommend, pulls with pushed progress, cancel and resume, refusal of a
// second pull of the same repository, and each failure with its code and what to do.

const rock5b = join(socFixturesDir, 'rockchip-rk3588-rock5b');

interface Rig {
  url: string;
  auth: Record<string, string>;
  store: ModelStore;
  hf: Standin;
  ms: Standin;
  jobs: HubPullJobs;
  workRoot: string;
}

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-hubroutes-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const context: RecommendContext = {
  board: {
    boardId: 'route-test-board',
    ramBytes: totalmem(),
    cpuClusters: [],
    backends: [{ backend: 'cpu', available: true, reason: 'MNN CPU runtime' }],
    priors: [],
    threadAdvice: { threads: 1, cpus: [], reason: 'test' },
  },
  policy: planPolicyFromConfig(undefined),
  probes: [],
  engineVersion: 'test',
  contextTokens: { 'voice.llm': 2048, 'voice.omni': 2048, 'vision.vlm': 2048, 'voice.asr': 512 },
};

async function rig(
  t: ExecutionContext,
  opts: {
    hub?: boolean;
    download?: Partial<DownloadPolicy>;
    http?: Partial<AgentConfig['http']>;
    context?: boolean;
    /** The configured Hugging Face endpoint instead of the stand-in's. */
    hfEndpoint?: string;
  } = {},
): Promise<Rig> {
  const dir = tempDir(t);
  const repos = () => [
    repoFromDir('taobao-mnn', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm'), { downloads: 9 }),
    repoFromDir('taobao-mnn', 'tiny-vlm-MNN', join(modelFixturesDir, 'tiny-vlm')),
    {
      owner: 'taobao-mnn',
      name: 'tiny-notes',
      commit: 'a'.repeat(40),
      files: [memoryFile('README.md', Buffer.from('# not a model\n'))],
    },
    {
      ...repoFromDir('taobao-mnn', 'gated-llm-MNN', join(modelFixturesDir, 'tiny-llm')),
      gated: true,
    },
  ];
  // A big weight file, so a pull lasts long enough on a slowed stand-in to be cancelled half-way.
  const slow = repoFromDir('taobao-mnn', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm'));
  const hfRepos = repos();
  hfRepos[0] = { ...slow, files: [...slow.files, memoryFile('extra.weight', Buffer.alloc(3 << 20, 7))] };
  const hf = await startHuggingFaceStandin(hfRepos);
  const ms = await startModelScopeStandin([
    repoFromDir('MNN', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm')),
  ]);
  const dataDir = join(dir, 'data');
  const db = openStore(join(dir, 'store.db'));
  const { store } = ModelStore.open({ dataDir, db });
  const models = {
    sources: {
      hf: { endpoint: opts.hfEndpoint ?? hf.endpoint },
      ms: { endpoint: ms.endpoint },
      allowLoopbackHttp: true,
    },
  };
  const env = {};
  const workRoot = join(dataDir, 'hub-downloads');
  const jobs = new HubPullJobs({
    store: () => store,
    client: (hub) => hubClient(hub, hubSettings(hub, models, env)),
    download: { ...defaultDownloadPolicy, headroomBytes: 0, backoffMs: 10, ...opts.download },
    workRoot,
    pushIntervalMs: 20,
  });
  const port = hubPortFrom({
    models,
    env,
    store: () => store,
    pulls: jobs,
    recommendContext: () => (opts.context === false ? undefined : context),
  });
  const sources: DashboardSources = {
    capabilities: () => detect({ root: rock5b }),
    engine: () => ({ available: false, reason: 'the engine addon is not built' }),
    ...(opts.hub === false ? {} : { hub: port }),
  };
  const base = defaultConfig({});
  const config: AgentConfig = {
    ...base,
    dataDir: join(dir, 'agent'),
    root: rock5b,
    http: { ...base.http, bind: '127.0.0.1', port: 0, ...opts.http },
  };
  const module = createDashboardModule({ sources, version: '1.2.3-test', distDir: join(dir, 'missing') });
  const agent = createAgent(config, {
    logger: createMemoryLogger(),
    version: '1.2.3-test',
    modules: [module],
  });
  t.teardown(async () => {
    await jobs.close();
    await agent.stop('test teardown');
    store.close();
    db.close();
    await hf.close();
    await ms.close();
  });
  await agent.start();
  const token = readFileSync(join(config.dataDir, 'pairing-token'), 'utf8').trim();
  return {
    url: `http://127.0.0.1:${agent.http.port}`,
    auth: { Authorization: `Bearer ${token}` },
    store,
    hf,
    ms,
    jobs,
    workRoot,
  };
}

async function call(
  r: Rig,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${r.url}${path}`, {
    method,
    headers: {
      ...r.auth,
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

function errorOf(json: Record<string, unknown>): { code: string; message: string } {
  return json['error'] as { code: string; message: string };
}

async function settled(r: Rig, id: string): Promise<PullJobView> {
  for (;;) {
    const view = r.jobs.get(id);
    if (view && view.state !== 'running' && view.state !== 'cancelling') return view;
    await new Promise((res) => setTimeout(res, 20));
  }
}

test('hub routes need credentials, and answer 503 with the reason when the agent has no hub port', async (t) => {
  const r = await rig(t, { hub: false });
  for (const [method, path] of [
    ['GET', '/api/hub/search'],
    ['GET', '/api/hub/recommend'],
    ['GET', '/api/hub/pulls'],
    ['POST', '/api/hub/pulls'],
    ['DELETE', '/api/hub/pulls/p1'],
  ] as const) {
    const anon = await fetch(`${r.url}${path}`, { method });
    t.is(anon.status, 401, `${method} ${path}`);
  }
  const res = await call(r, 'GET', '/api/hub/search?q=tiny');
  t.is(res.status, 503);
  t.deepEqual(res.json, {
    error: { code: 'hub_unavailable', message: 'Model hub pulls are not available on this agent' },
  });
});

test('search: the MNN exports with size, task and a problem for what is not one; bad queries are 400', async (t) => {
  const r = await rig(t);
  const res = await call(r, 'GET', '/api/hub/search?source=hf&q=tiny');
  t.is(res.status, 200);
  const listings = res.json['listings'] as Array<Record<string, unknown>>;
  t.is(res.json['owner'], 'taobao-mnn');
  const llm = listings.find((l) => l['repo'] === 'taobao-mnn/tiny-llm-MNN');
  t.like(llm, { source: 'hf://taobao-mnn/tiny-llm-MNN', task: 'llm', kind: 'text' });
  t.true((llm?.['sizeBytes'] as number) > 3 << 20);
  t.like(
    listings.find((l) => l['repo'] === 'taobao-mnn/tiny-vlm-MNN'),
    { task: 'vlm' },
  );
  t.regex(
    String(listings.find((l) => l['repo'] === 'taobao-mnn/tiny-notes')?.['problem']),
    /is not an MNN export: it has no config\.json and no \.mnn graph/,
  );
  const ms = await call(r, 'GET', '/api/hub/search?source=ms&q=llm');
  t.deepEqual(
    (ms.json['listings'] as Array<{ source: string }>).map((l) => l.source),
    ['ms://MNN/tiny-llm-MNN'],
  );

  const bad = async (query: string, message: RegExp) => {
    const res = await call(r, 'GET', `/api/hub/search?${query}`);
    t.is(res.status, 400, query);
    t.is(errorOf(res.json).code, 'invalid_parameter');
    t.regex(errorOf(res.json).message, message);
  };
  await bad('source=github', /source must be hf \(Hugging Face\) or ms \(ModelScope\), got "github"/);
  await bad(`q=${encodeURIComponent('tiny&author=evil')}`, /Search words are letters, digits and/);
  await bad(`q=${encodeURIComponent('a b c d e f g h i')}`, /at most 8 words, got 9/);
  await bad(`q=${'x'.repeat(65)}`, /at most 64 each/);
  await bad(`q=${'ab'.repeat(150)}`, /Search text is at most 200 characters, got 300/);
  await bad('q=tiny&limit=500', /limit/);
});

test('recommend: per role with the reasons, ranked for the board; 503 with the reason before the runtime plans', async (t) => {
  const r = await rig(t);
  const res = await call(r, 'GET', '/api/hub/recommend?source=hf');
  t.is(res.status, 200);
  t.is(res.json['board'], 'route-test-board');
  t.regex(String(res.json['budget']), /budget \d+ MiB/);
  const recs = res.json['recommendations'] as Array<{
    role: string;
    source: string;
    fits: boolean;
    reasons: string[];
  }>;
  const llm = recs.find((x) => x.role === 'voice.llm' && x.source === 'hf://taobao-mnn/tiny-llm-MNN');
  t.truthy(llm);
  t.true(llm!.fits);
  t.regex(llm!.reasons[0]!, /^fits: [\d.]+ MiB with a 2048-token KV cache, budget \d+ MiB/);
  t.true(llm!.reasons.some((x) => /runs on cpu/.test(x)));
  t.true(recs.some((x) => x.role === 'vision.vlm' && x.source === 'hf://taobao-mnn/tiny-vlm-MNN'));
  // The described exports are reused by the next visit: no second round of requests to the hub.
  const asked = r.hf.log.requests.length;
  t.is((await call(r, 'GET', '/api/hub/recommend?source=hf')).status, 200);
  t.is(r.hf.log.requests.length, asked);

  const early = await rig(t, { context: false });
  const none = await call(early, 'GET', '/api/hub/recommend');
  t.is(none.status, 503);
  t.regex(errorOf(none.json).message, /has not planned for this board yet/);
});

test('a pull body goes through the JSON limits and the pull-model schema', async (t) => {
  const r = await rig(t, { http: { maxUploadBytes: 1024 } });
  const bad = async (
    body: string,
    headers: Record<string, string>,
    status: number,
    code: string,
    message: RegExp,
  ) => {
    const res = await call(r, 'POST', '/api/hub/pulls', body, headers);
    t.is(res.status, status, body.slice(0, 40));
    t.is(errorOf(res.json).code, code);
    t.regex(errorOf(res.json).message, message);
  };
  await bad('{"source":', {}, 400, 'invalid_json', /not valid JSON/);
  await bad(
    '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
    {},
    400,
    'invalid_json',
    /nests deeper than 64 levels/,
  );
  await bad(
    '{"source":"hf://a/b"}',
    { 'Content-Type': 'text/plain' },
    415,
    'unsupported_media_type',
    /application\/json/,
  );
  await bad(JSON.stringify({ source: 'x'.repeat(2000) }), {}, 413, 'payload_too_large', /1024 bytes/);
  await bad('{"source":"hf://a/b","force":true}', {}, 400, 'invalid_request', /force/);
  await bad('{"id":"x"}', {}, 400, 'invalid_request', /source/);
  await bad('{"source":"hf://a/b","id":"Bad Id"}', {}, 400, 'invalid_request', /id/);
  await bad('{"source":"ftp://a/b"}', {}, 400, 'invalid_request', /ftp:\/\/a\/b/);
  t.deepEqual(r.jobs.list(), []);
  const missing = await call(r, 'DELETE', '/api/hub/pulls/p999');
  t.is(missing.status, 404);
  t.is(errorOf(missing.json).code, 'unknown_pull');
  const odd = await call(r, 'DELETE', '/api/hub/pulls/..%2Fetc');
  t.is(odd.status, 404);
});

test('a pull: progress pushed live, a second pull of the same repo refused, cancel stops it, a retry resumes and installs', async (t) => {
  const r = await rig(t);
  r.hf.bytesPerSecond = 1 << 20;
  const ws = new WebSocket(`${r.url.replace('http', 'ws')}/api/hub/pulls/live`, { headers: r.auth });
  const messages: Array<{ type: string; pull?: PullJobView; pulls?: PullJobView[] }> = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data))));
  await new Promise((res) => ws.once('open', res));
  t.teardown(() => ws.close());

  const started = await call(r, 'POST', '/api/hub/pulls', { source: 'hf://taobao-mnn/tiny-llm-MNN' });
  t.is(started.status, 202);
  const pull = started.json['pull'] as PullJobView;
  t.like(pull, { source: 'hf://taobao-mnn/tiny-llm-MNN', state: 'running', trust: 'unsigned-tofu' });
  t.regex(pull.requestedBy, /^dashboard \(bearer from 127\.0\.0\.1\)$/);

  const again = await call(r, 'POST', '/api/hub/pulls', {
    source: 'https://huggingface.co/taobao-mnn/tiny-llm-MNN',
  });
  t.is(again.status, 409);
  t.is(errorOf(again.json).code, 'pull_in_progress');
  t.regex(
    errorOf(again.json).message,
    /^hf:\/\/taobao-mnn\/tiny-llm-MNN is already being pulled \(pull p1, \d+ %, asked by dashboard/,
  );

  // Cancel half-way through the big file.
  for (;;) {
    const v = r.jobs.get(pull.id)!;
    if (v.phase === 'downloading' && v.doneBytes > 1 << 20) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  const cancelled = await call(r, 'DELETE', `/api/hub/pulls/${pull.id}`);
  t.is(cancelled.status, 200);
  const view = cancelled.json['pull'] as PullJobView;
  t.is(view.state, 'cancelled');
  t.regex(view.error!.message, /^Cancelled; pulling the same model again resumes/);
  // Nothing in the store; what arrived waits in the download directory.
  t.deepEqual(r.store.list(), []);
  t.is(readdirSync(r.workRoot).length, 1);
  const live = messages.filter((m) => m.type === 'pull').map((m) => m.pull!);
  t.is(messages[0]?.type, 'pulls');
  const progress = live.filter((p) => p.state === 'running' && p.phase === 'downloading');
  t.true(progress.length >= 2, `progress views: ${progress.length}`);
  t.true(progress.some((p) => p.bytesPerSecond !== undefined && p.etaSeconds !== undefined));
  t.true(live.some((p) => p.state === 'cancelled'));

  r.hf.bytesPerSecond = 0;
  const served = r.hf.log.bytes;
  const retry = await call(r, 'POST', '/api/hub/pulls', { source: 'hf://taobao-mnn/tiny-llm-MNN' });
  t.is(retry.status, 202);
  const done = await settled(r, (retry.json['pull'] as PullJobView).id);
  t.like(done, { state: 'installed', model: 'tiny-llm-mnn@1.0.0', trust: 'unsigned-tofu' });
  t.true(done.fetchedBytes! < done.totalBytes, 'the retry resumed');
  t.true(r.hf.log.bytes - served < done.totalBytes);
  t.is(r.store.list().length, 1);
  const list = await call(r, 'GET', '/api/hub/pulls');
  t.deepEqual(
    (list.json['pulls'] as PullJobView[]).map((p) => [p.id, p.state]),
    [
      ['p2', 'installed'],
      ['p1', 'cancelled'],
    ],
  );
  // Searching again shows it installed.
  const search = await call(r, 'GET', '/api/hub/search?q=tiny-llm');
  t.like((search.json['listings'] as Array<Record<string, unknown>>)[0], { installed: 'tiny-llm-mnn@1.0.0' });
});

test('failed pulls say why and what to do: unknown repo, gated repo, not an MNN export, disk too small', async (t) => {
  const r = await rig(t);
  const fail = async (source: string) => {
    const res = await call(r, 'POST', '/api/hub/pulls', { source });
    t.is(res.status, 202);
    return settled(r, (res.json['pull'] as PullJobView).id);
  };
  const missing = await fail('hf://taobao-mnn/nope-MNN');
  t.like(missing, { state: 'failed', error: { code: 'EHUBNOTFOUND' } });
  t.regex(missing.error!.message, /Hugging Face has no .*taobao-mnn\/nope-MNN/);
  t.regex(missing.error!.hint!, /Check the owner, name and revision/);

  const gated = await fail('hf://taobao-mnn/gated-llm-MNN');
  t.like(gated, { state: 'failed', error: { code: 'EHUBAUTH' } });
  t.regex(gated.error!.message, /needs a token .*set HF_TOKEN/);
  t.regex(gated.error!.hint!, /^Set HF_TOKEN in the agent's environment/);

  const notes = await fail('hf://taobao-mnn/tiny-notes');
  t.like(notes, { state: 'failed', error: { code: 'EHUBNOTMNN' } });
  t.regex(notes.error!.message, /is not an MNN export: it has no config\.json and no \.mnn graph/);

  const full = await rig(t, { download: { headroomBytes: 2 ** 52 } });
  const res = await call(full, 'POST', '/api/hub/pulls', { source: 'ms://MNN/tiny-llm-MNN' });
  const disk = await settled(full, (res.json['pull'] as PullJobView).id);
  t.like(disk, { state: 'failed', error: { code: 'ENOSPC' } });
  t.regex(disk.error!.message, /^Not enough disk space for MNN\/tiny-llm-MNN: \d+ bytes needed/);
  t.regex(disk.error!.hint!, /Free space on the data partition/);
  t.is(full.ms.log.bytes, 0, 'refused before any download');
  t.deepEqual(full.store.list(), []);
});

test('a hub endpoint the configuration names wrongly: 503 naming it, and the token variables are still listed', async (t) => {
  const r = await rig(t, { hfEndpoint: 'http://mirror.example.com' });
  const sources = await call(r, 'GET', '/api/hub/sources');
  t.is(sources.status, 200);
  t.deepEqual(
    (sources.json['sources'] as Array<{ source: string; tokenVariable: string; hasToken: boolean }>).map(
      (s) => [s.source, s.tokenVariable, s.hasToken],
    ),
    [
      ['hf', 'HF_TOKEN', false],
      ['ms', 'MODELSCOPE_API_TOKEN', false],
    ],
  );
  for (const [method, path, body] of [
    ['GET', '/api/hub/search?q=tiny', undefined],
    ['POST', '/api/hub/pulls', { source: 'hf://taobao-mnn/tiny-llm-MNN' }],
  ] as const) {
    const res = await call(r, method, path, body);
    t.is(res.status, 503, path);
    t.is(errorOf(res.json).code, 'hub_unavailable');
    t.regex(errorOf(res.json).message, /Hugging Face endpoint .*mirror\.example\.com/);
  }
  // ModelScope is configured well and still works.
  const ms = await call(r, 'GET', '/api/hub/search?source=ms&q=tiny');
  t.is(ms.status, 200);
});
