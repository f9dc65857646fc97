import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { OVERLAY_FILE } from '../../agent/config/overlay-store.js';
import { STORE_FILE } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelStore } from '../../models/index.js';
import { modelFixturesDir } from '../helpers/paths.js';
import { spawnAgentRun } from '../helpers/run-agent.js';

// `mnn-edge run` as its own process, changed over its HTTP API as the dashboard does: validated with the
// file's messages, checked against the installed models, guarded by If-Match, logged, and kept across a restart;
// a damaged overlay file is reported on /healthz and not used.

interface Body {
  keys: Array<Record<string, unknown>>;
  error: { code: string; message: string };
  placement: { slots: Array<{ slot: string }> };
  entries: Array<{ revision: number; who: string }>;
  problem: string;
  [k: string]: unknown;
}

async function startAgent(t: ExecutionContext, dataDir: string, config: Record<string, unknown>) {
  const child = spawnAgentRun(dataDir, { config });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise((r) => child.once('exit', r));
  t.teardown(() => child.kill('SIGKILL'));
  const wait = async (what: string, pred: () => boolean) => {
    for (let i = 0; i < 1200 && !pred(); i++) await new Promise((r) => setTimeout(r, 50));
    if (!pred()) throw new Error(`timed out waiting for ${what}:\n${out}`);
  };
  await wait('listening', () => /"msg":"listening".*?"port":\d+/.test(out));
  await wait('modules', () => out.includes('"msg":"workloads ready"'));
  const port = Number(/"msg":"listening".*?"port":(\d+)/.exec(out)![1]);
  const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return {
      status: res.status,
      etag: res.headers.get('etag'),
      body: (await res.json()) as Body,
    };
  };
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  return { call, stop, out: () => out };
}

test('run-time settings over HTTP: checked, guarded, logged, kept; a damaged overlay is reported, not used', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-settings-http-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  const db = openStore(join(dataDir, STORE_FILE), { migrations: allMigrations });
  const { store } = ModelStore.open({ dataDir, db, log: createMemoryLogger() });
  for (const name of ['tiny-llm', 'silero-vad'])
    await store.import(join(modelFixturesDir, name), { version: '1.0.0' });
  store.close();
  db.close();

  const agent = await startAgent(t, dataDir, { tags: ['lab'] });
  const first = await agent.call('GET', '/api/config');
  t.is(first.status, 200);
  t.is(first.etag, '"0"');
  const row = (body: Body, key: string) => body.keys.find((k) => k['key'] === key);
  t.like(row(first.body, 'tags'), { value: ['lab'], source: 'file', access: 'live' });
  t.like(row(first.body, 'http.port'), { source: 'flag', access: 'file' });

  const wrongTask = await agent.call('PATCH', '/api/config', {
    slots: { 'voice.llm': { model: 'silero-vad' } },
  });
  t.is(wrongTask.status, 409);
  t.regex(
    wrongTask.body.error.message,
    /slots\.voice\.llm: model "silero-vad" is a vad model; voice\.llm takes llm or vlm or omni models/,
  );
  const missing = await agent.call('PATCH', '/api/config', { slots: { 'voice.llm': { model: 'nope' } } });
  t.is(missing.status, 409);
  t.regex(
    missing.body.error.message,
    /"nope" is not installed on this device \(installed: silero-vad, tiny-llm\)/,
  );
  const range = await agent.call('PATCH', '/api/config', { voice: { maxNewTokens: 0 } });
  t.is(range.status, 400);
  t.regex(range.body.error.message, /voice\.maxNewTokens: expected a number >= 1, got 0/);
  const locked = await agent.call('PATCH', '/api/config', { http: { bind: '0.0.0.0' } });
  t.is(locked.status, 400);
  t.regex(locked.body.error.message, /http\.bind: is changed only in the configuration file/);

  const use = await agent.call(
    'PATCH',
    '/api/config',
    { slots: { 'voice.llm': { model: 'tiny-llm' } } },
    { 'If-Match': '"0"' },
  );
  t.is(use.status, 200, JSON.stringify(use.body));
  t.is(use.body['revision'], 1);
  t.deepEqual(use.body['applied'], ['slots.voice.llm.model']);
  const placement = await agent.call('GET', '/api/runtime/placement');
  t.truthy(placement.body.placement.slots.find((s) => s.slot === 'voice.llm'));

  const stale = await agent.call('PATCH', '/api/config', { tags: ['x'] }, { 'If-Match': '"0"' });
  t.is(stale.status, 409);
  t.is(stale.body.error.code, 'revision_conflict');
  t.regex(stale.body.error.message, /at revision 1, not 0/);
  t.is(stale.etag, '"1"');

  const restartKey = await agent.call('PATCH', '/api/config', { log: { level: 'debug' }, expectRevision: 1 });
  t.deepEqual(restartKey.body['restartRequired'], ['log.level']);
  const history = await agent.call('GET', '/api/config/history');
  t.deepEqual(
    history.body.entries.map((e) => e.revision),
    [2, 1],
  );
  t.regex(history.body.entries[1]!.who, /^dashboard \(bearer from /);
  // The entry's `key` is a path, not a secret: shown as it is (a secret key's values are masked).
  t.like((history.body.entries[0] as unknown as { changes: unknown[] }).changes[0], {
    key: 'log.level',
    new: 'debug',
  });
  await agent.stop();

  // Kept across a restart; then a damaged file: the last good revision runs and /healthz says why.
  writeFileSync(join(dataDir, OVERLAY_FILE), '{"format":1,');
  const again = await startAgent(t, dataDir, { tags: ['lab'] });
  const health = (await (
    await fetch(`http://127.0.0.1:${/"port":(\d+)/.exec(again.out())![1]}/healthz`)
  ).json()) as {
    settings: { revision: number; problem?: string };
  };
  t.is(health.settings.revision, 2);
  t.regex(health.settings.problem ?? '', /not valid JSON.*running on revision 2 from the change log/);
  const cfg = await again.call('GET', '/api/config');
  t.like(row(cfg.body, 'slots.voice.llm.model'), { value: 'tiny-llm', source: 'overlay' });
  t.regex(cfg.body.problem, /not used/);
  await again.stop();
});
