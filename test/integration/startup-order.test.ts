// The agent answers before its modules have started: /healthz (with each module's state) and systemd's READY
// come first; a path no module has registered yet answers 503 with Retry-After until the modules are up.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { defaultConfig } from '../../agent/config/defaults.js';
import { type AgentModule, createAgent } from '../../agent/main.js';
import { createMemoryLogger } from '../../lib/log.js';

test('serving before the modules: healthz shows their states, their paths answer 503 until registered', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-startup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const base = defaultConfig({});
  const config = {
    ...base,
    dataDir: join(dir, 'data'),
    root: join(dir, 'no-such-root'),
    http: { ...base.http, bind: '127.0.0.1', port: 0 },
  };
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const slow: AgentModule = {
    name: 'slow',
    async start(ctx) {
      await gate;
      ctx.router.route('GET', '/api/slow', (c) => c.json(200, { ok: true }));
    },
  };
  const quick: AgentModule = { name: 'quick', start() {} };
  const logger = createMemoryLogger();
  // Lazy: the module list itself is only asked for once the server answers.
  let asked = false;
  const agent = createAgent(config, {
    logger,
    version: '9.9.9-test',
    modules: async () => {
      asked = true;
      return [quick, slow];
    },
  });
  t.teardown(() => agent.stop('test teardown'));
  const started = agent.start();
  await agent.serving;
  const url = `http://127.0.0.1:${agent.http.port}`;
  const auth = {
    Authorization: `Bearer ${readFileSync(join(config.dataDir, 'pairing-token'), 'utf8').trim()}`,
  };

  const health = await fetch(`${url}/healthz`);
  t.is(health.status, 200);
  t.true(asked);
  t.deepEqual(((await health.json()) as { modules: unknown }).modules, {
    quick: 'running',
    slow: 'starting',
  });
  const early = await fetch(`${url}/api/slow`, { headers: auth });
  t.is(early.status, 503);
  t.is(early.headers.get('retry-after'), '1');
  t.is(((await early.json()) as { error: { code: string } }).error.code, 'starting');
  // Anonymous clients learn nothing about the route map while starting: every unregistered path answers the same
  // 503 (the dashboard's public page may be one of them, so 401 would be wrong for it).
  t.is((await fetch(`${url}/api/slow`)).status, 503);
  t.is((await fetch(`${url}/no/such/path`)).status, 503);

  release();
  await started;
  t.is((await fetch(`${url}/api/slow`, { headers: auth })).status, 200);
  t.is((await fetch(`${url}/api/nothing`, { headers: auth })).status, 404);
  t.is((await fetch(`${url}/api/slow`)).status, 401);
  t.deepEqual(agent.moduleStates(), { quick: 'running', slow: 'running' });
  t.true(logger.lines.some((l) => l.includes('"msg":"module started"') && l.includes('"module":"slow"')));
});
