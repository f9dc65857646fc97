import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import WebSocket from 'ws';
import { defaultConfig } from '../../agent/config/defaults.js';
import type { AgentConfig } from '../../agent/config/schema.js';
import { type Agent, type AgentModule, createAgent } from '../../agent/main.js';
import { createMemoryLogger } from '../../lib/log.js';
import { spawnAgentRun } from '../helpers/run-agent.js';
import { selfSignedCert } from '../helpers/tls.js';
import { until } from '../helpers/until.js';
import { startNotifyListener } from './sdnotify-listener.js';

// The agent in-process on port 0 with a temp data dir, spoken to over real HTTP and WebSocket on loopback.

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-daemon-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function testConfig(dataDir: string, http: Partial<AgentConfig['http']> = {}): AgentConfig {
  const base = defaultConfig({});
  return {
    ...base,
    dataDir,
    root: join(dataDir, 'no-such-root'),
    http: { ...base.http, bind: '127.0.0.1', port: 0, ...http },
  };
}

async function startAgent(
  t: ExecutionContext,
  config: AgentConfig,
  modules: AgentModule[] = [],
): Promise<{ agent: Agent; base: string; logs: string[] }> {
  const logger = createMemoryLogger();
  const agent = createAgent(config, { logger, version: '9.9.9-test', modules });
  t.teardown(() => agent.stop('test teardown'));
  await agent.start();
  const scheme = agent.http.secure ? 'https' : 'http';
  return { agent, base: `${scheme}://127.0.0.1:${agent.http.port}`, logs: logger.lines };
}

const token = (dataDir: string) => readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();

async function login(base: string, body: unknown): Promise<Response> {
  return fetch(`${base}/api/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

test('first start: 0600 pairing token, /healthz public, everything else 401 with a JSON error', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const { base, logs } = await startAgent(t, testConfig(dataDir));
  t.is(statSync(join(dataDir, 'pairing-token')).mode & 0o777, 0o600);
  t.is(statSync(dataDir).mode & 0o777, 0o700);
  t.regex(token(dataDir), /^[A-Za-z0-9_-]{43}$/);

  const health = await fetch(`${base}/healthz`);
  t.is(health.status, 200);
  const body = (await health.json()) as { status: string; version: string; uptimeS: number };
  t.is(body.status, 'ok');
  t.is(body.version, '9.9.9-test');
  t.is(typeof body.uptimeS, 'number');

  for (const path of ['/api/anything', '/api/session', '/', '/dashboard/index.html']) {
    const res = await fetch(`${base}${path}`);
    t.is(res.status, 401, path);
    t.is(res.headers.get('www-authenticate'), 'Bearer realm="mnn-edge"');
    t.deepEqual(await res.json(), {
      error: {
        code: 'unauthorized',
        message:
          'Authentication required: log in with the pairing token (POST /api/login) or send Authorization: Bearer <token>',
      },
    });
  }
  t.true(logs.some((l) => l.includes('"msg":"listening"')));
});

test('login sets an HttpOnly SameSite=Strict cookie that authenticates; logout revokes it', async (t) => {
  const dataDir = tempDir(t);
  const { base } = await startAgent(t, testConfig(dataDir));
  const res = await login(base, { token: token(dataDir) });
  t.is(res.status, 200);
  const setCookie = res.headers.get('set-cookie') ?? '';
  t.regex(setCookie, /^mnn_edge_session=[\w-]+\.[\w-]+; Path=\/; Max-Age=604800; HttpOnly; SameSite=Strict$/);
  const cookie = setCookie.split(';')[0]!;

  const session = await fetch(`${base}/api/session`, { headers: { cookie } });
  t.is(session.status, 200);
  t.like(await session.json(), {
    method: 'session',
    device: { source: 'generated' },
    clock: { state: 'unknown' },
  });

  const out = await fetch(`${base}/api/logout`, { method: 'POST', headers: { cookie } });
  t.deepEqual(await out.json(), { ok: true, revoked: true });
  t.is(out.headers.get('set-cookie'), 'mnn_edge_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict');
  t.is((await fetch(`${base}/api/session`, { headers: { cookie } })).status, 401);
});

test('Bearer token works for API clients; a wrong one does not', async (t) => {
  const dataDir = tempDir(t);
  const { base } = await startAgent(t, testConfig(dataDir));
  const ok = await fetch(`${base}/api/session`, { headers: { authorization: `Bearer ${token(dataDir)}` } });
  t.is(ok.status, 200);
  t.like(await ok.json(), { method: 'bearer', expiresAt: null });
  const bad = await fetch(`${base}/api/session`, { headers: { authorization: `Bearer ${'x'.repeat(43)}` } });
  t.is(bad.status, 401);
  const missing = await fetch(`${base}/api/nothing-here`, {
    headers: { authorization: `Bearer ${token(dataDir)}` },
  });
  t.is(missing.status, 404);
  t.deepEqual(await missing.json(), {
    error: { code: 'not_found', message: 'No endpoint at /api/nothing-here' },
  });
  const wrongMethod = await fetch(`${base}/api/session`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token(dataDir)}` },
  });
  t.is(wrongMethod.status, 405);
  t.is(wrongMethod.headers.get('allow'), 'GET, HEAD');
});

test('bad logins: clear 400s, 401 for a wrong token, 429 with Retry-After after five failures', async (t) => {
  const dataDir = tempDir(t);
  const { base, logs } = await startAgent(t, testConfig(dataDir));
  const notJson = await fetch(`${base}/api/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{token',
  });
  t.is(notJson.status, 400);
  t.like(await notJson.json(), { error: { code: 'invalid_json' } });
  const wrongShape = await login(base, { secret: 'x' });
  t.deepEqual(await wrongShape.json(), {
    error: { code: 'invalid_request', message: 'Expected a JSON object {"token": string}' },
  });
  for (let i = 0; i < 5; i++) {
    const res = await login(base, { token: `wrong-${i}` });
    t.is(res.status, 401);
    t.deepEqual(await res.json(), {
      error: {
        code: 'invalid_token',
        message: 'The pairing token is not valid (see `mnn-edge token` on the device)',
      },
    });
  }
  const limited = await login(base, { token: token(dataDir) });
  t.is(limited.status, 429);
  t.regex(limited.headers.get('retry-after') ?? '', /^\d+$/);
  t.regex(
    ((await limited.json()) as { error: { message: string } }).error.message,
    /^Too many failed logins; try again in \d+ s$/,
  );
  t.is(logs.filter((l) => l.includes('"msg":"failed login"')).length, 5);
});

test('modules hang routes and websockets on the router; bodies over http.maxUploadBytes get 413', async (t) => {
  const dataDir = tempDir(t);
  const echo: AgentModule = {
    name: 'echo',
    start({ router }) {
      router.route('POST', '/api/echo', async (ctx) =>
        ctx.json(200, { bytes: (await ctx.readBody()).length }),
      );
      router.upgrade('/api/ws/echo', (ws) => ws.on('message', (data) => ws.send(`echo:${String(data)}`)));
    },
  };
  const { base } = await startAgent(t, testConfig(dataDir, { maxUploadBytes: 2048 }), [echo]);
  const authorization = `Bearer ${token(dataDir)}`;
  const small = await fetch(`${base}/api/echo`, {
    method: 'POST',
    headers: { authorization },
    body: 'x'.repeat(2048),
  });
  t.deepEqual(await small.json(), { bytes: 2048 });
  const big = await fetch(`${base}/api/echo`, {
    method: 'POST',
    headers: { authorization },
    body: 'x'.repeat(4096),
  });
  t.is(big.status, 413);
  t.deepEqual(await big.json(), {
    error: {
      code: 'payload_too_large',
      message: 'Request body exceeds the limit of 2048 bytes (http.maxUploadBytes)',
    },
  });

  const wsUrl = `${base.replace('http', 'ws')}/api/ws/echo`;
  const ws = new WebSocket(wsUrl, { headers: { authorization } });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(String(d))));
  ws.send('hi');
  t.is(await reply, 'echo:hi');
  ws.close();

  const anonymous = new WebSocket(wsUrl);
  const err = await new Promise<Error>((resolve) => anonymous.once('error', resolve));
  t.is(err.message, 'Unexpected server response: 401');
});

test('a chunked body is cut off at the limit; handler crashes answer 500 without leaking details', async (t) => {
  const dataDir = tempDir(t);
  const module: AgentModule = {
    name: 'crashy',
    start({ router }) {
      router.route('POST', '/api/upload', async (ctx) =>
        ctx.json(200, { bytes: (await ctx.readBody()).length }),
      );
      router.route('GET', '/api/crash', () => {
        throw new Error('secret internal detail');
      });
    },
  };
  const { base, logs } = await startAgent(t, testConfig(dataDir, { maxUploadBytes: 1024 }), [module]);
  const authorization = `Bearer ${token(dataDir)}`;
  const chunks = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < 8; i++) controller.enqueue(new Uint8Array(512));
      controller.close();
    },
  });
  const chunked = await fetch(`${base}/api/upload`, {
    method: 'POST',
    headers: { authorization },
    body: chunks,
    duplex: 'half',
  } as RequestInit);
  t.is(chunked.status, 413);

  const crash = await fetch(`${base}/api/crash`, { headers: { authorization } });
  t.is(crash.status, 500);
  t.deepEqual(await crash.json(), {
    error: { code: 'internal_error', message: 'The agent failed to handle this request; see its log' },
  });
  t.true(
    logs.some((l) => l.includes('"msg":"request handler failed"') && l.includes('secret internal detail')),
  );

  const form = await fetch(`${base}/api/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'token=x',
  });
  t.is(form.status, 415);
  t.deepEqual(await form.json(), {
    error: {
      code: 'unsupported_media_type',
      message: 'Expected Content-Type application/json, got application/x-www-form-urlencoded',
    },
  });
});

test('a session cookie opens a same-origin websocket but not a cross-origin one', async (t) => {
  const dataDir = tempDir(t);
  const probe: AgentModule = {
    name: 'probe',
    start({ router }) {
      router.upgrade('/api/ws/probe', (ws, ctx) => ws.send(ctx.auth?.method ?? 'none'));
    },
  };
  const { base } = await startAgent(t, testConfig(dataDir), [probe]);
  const res = await login(base, { token: token(dataDir) });
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  const wsUrl = `${base.replace('http', 'ws')}/api/ws/probe`;
  const host = new URL(base).host;

  const same = new WebSocket(wsUrl, { headers: { cookie, origin: `http://${host}` } });
  t.is(await new Promise<string>((resolve) => same.once('message', (d) => resolve(String(d)))), 'session');
  same.close();

  const foreign = new WebSocket(wsUrl, { headers: { cookie, origin: 'http://evil.example' } });
  const err = await new Promise<Error>((resolve) => foreign.once('error', resolve));
  t.is(err.message, 'Unexpected server response: 403');
});

test('identity, pairing token and browser sessions persist across restarts', async (t) => {
  const dataDir = tempDir(t);
  const first = await startAgent(t, testConfig(dataDir));
  const res = await login(first.base, { token: token(dataDir) });
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  const firstId = first.agent.identity.deviceId;
  const firstToken = token(dataDir);
  await first.agent.stop('restart');

  const second = await startAgent(t, testConfig(dataDir));
  t.is(second.agent.identity.deviceId, firstId);
  t.is(second.agent.identity.source, 'stored');
  t.is(token(dataDir), firstToken);
  t.is((await fetch(`${second.base}/api/session`, { headers: { cookie } })).status, 200);
});

test('TLS from config.http.tls: the cookie gets Secure', async (t) => {
  const dir = tempDir(t);
  const { cert, key } = selfSignedCert(dir);
  const dataDir = join(dir, 'data');
  const { agent } = await startAgent(t, testConfig(dataDir, { tls: { cert, key } }));
  t.true(agent.http.secure);
  const { request } = await import('node:https');
  const setCookie = await new Promise<string>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: agent.http.port,
        path: '/api/login',
        method: 'POST',
        rejectUnauthorized: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        resolve(String(res.headers['set-cookie']?.[0]));
      },
    );
    req.once('error', reject);
    req.end(JSON.stringify({ token: token(dataDir) }));
  });
  t.true(setCookie.endsWith('; HttpOnly; SameSite=Strict; Secure'));
});

test('an unreadable TLS certificate is a clear start-up error', (t) => {
  const dataDir = tempDir(t);
  const missing = join(dataDir, 'nope.pem');
  t.throws(
    () =>
      createAgent(testConfig(dataDir, { tls: { cert: missing, key: missing } }), {
        logger: createMemoryLogger(),
      }),
    {
      message: new RegExp(`^Cannot read http\\.tls\\.cert ${missing}: ENOENT`),
    },
  );
});

test('a port in use is reported as such', async (t) => {
  const dataDir = tempDir(t);
  const { agent } = await startAgent(t, testConfig(dataDir));
  const clash = createAgent(testConfig(join(dataDir, 'other'), { port: agent.http.port }), {
    logger: createMemoryLogger(),
  });
  await t.throwsAsync(clash.start(), {
    message: `Cannot listen on 127.0.0.1:${agent.http.port}: address already in use (http.port)`,
  });
});

test('the clock.synchronized event fires once when NTP sync appears, and the time is checkpointed', async (t) => {
  const dataDir = tempDir(t);
  let synchronized = false;
  const agent = createAgent(testConfig(dataDir), {
    logger: createMemoryLogger(),
    syncProbe: () => ({ synchronized, evidence: synchronized ? 'test: synced' : 'test: waiting' }),
    clockSyncPollMs: 10,
  });
  t.teardown(() => agent.stop());
  await agent.start();
  t.is(agent.time.clockStatus().state, 'unsynchronized');
  const fired: number[] = [];
  agent.events.on('clock.synchronized', (e) => fired.push(e.wallMs));
  synchronized = true;
  await until(() => fired.length > 0, 'clock.synchronized');
  // Ten more polls' time: it fires once, not on every poll that finds the clock synchronized.
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.is(fired.length, 1);
  t.like(agent.kv.get('time.lastKnownGood'), { source: 'ntp' });
});

function listeningPort(child: ReturnType<typeof spawnAgentRun>, log: { out: string }): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      log.out += chunk.toString();
      const m = /"msg":"listening".*?"port":(\d+)/.exec(log.out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`exited early with ${code}: ${log.out}`)));
  });
}

test('`mnn-edge run` serves until SIGTERM, then stops gracefully with exit code 0', async (t) => {
  const child = spawnAgentRun(tempDir(t));
  t.teardown(() => child.kill('SIGKILL'));
  const log = { out: '' };
  const port = await listeningPort(child, log);
  t.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  t.is(await exited, 0);
  const lines = log.out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { msg: string; reason?: string });
  t.like(lines.at(-1), { msg: 'stopped', reason: 'signal SIGTERM' });
});

test('under systemd (NOTIFY_SOCKET) `mnn-edge run` asks for start time, sends READY=1 once serving, pings the watchdog and sends STOPPING=1 on SIGTERM', async (t) => {
  const dir = tempDir(t);
  const listener = await startNotifyListener(join(dir, 'notify.sock'));
  t.teardown(() => listener.close());
  // Without WATCHDOG_PID the watchdog variables are the receiving process's own (sd_watchdog_enabled(3)).
  const child = spawnAgentRun(join(dir, 'data'), {
    env: { NOTIFY_SOCKET: listener.path, WATCHDOG_USEC: '600000000' },
  });
  t.teardown(() => child.kill('SIGKILL'));
  await listeningPort(child, { out: '' });
  const ready = await listener.waitFor('READY=1');
  t.is(ready.pid, child.pid ?? null);
  await listener.waitFor('WATCHDOG=1');
  const order = listener.received.map((n) => n.data.split('=')[0]);
  t.is(order[0], 'EXTEND_TIMEOUT_USEC', 'more start time is asked for before anything else');
  t.true(order.indexOf('READY') < order.indexOf('WATCHDOG'), JSON.stringify(order));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await listener.waitFor('STOPPING=1');
  t.is(await exited, 0);
});
