// The MCP client ToolSource against a real MCP server made with the SDK (test/helpers/mcp-home.ts) over loopback
// HTTP: tools listed and refreshed, lights switched, and every fault the issue names (down at start, dying
// mid-call, slow, failing, huge, wrong token) answered as an outcome that names the server, never thrown.
import { createServer } from 'node:net';
import test from 'ava';
import { createMcpToolSource, type McpSourceLimits } from '../../agent/workloads/tools/mcp/client-source.js';
import type { ToolCallContext } from '../../agent/workloads/tools/types.js';
import { startMcpHome } from '../helpers/mcp-home.js';
import { until } from '../helpers/until.js';

const ctx = (): ToolCallContext => ({ signal: new AbortController().signal, remote: false });

// Short backoff so reconnection happens within the test's patience; the budgets are generous otherwise.
const fast: Partial<McpSourceLimits> = { retryMinMs: 50, retryMaxMs: 200, refreshIntervalMs: 0 };

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

test('lists the home tools with their schemas, switches a light and reads the live context', async (t) => {
  const home = await startMcpHome();
  t.teardown(() => home.close());
  const source = createMcpToolSource({ name: 'home', url: home.url, token: home.token }, fast);
  t.teardown(() => source.close());

  const tools = await source.list();
  t.deepEqual(
    tools.map((x) => x.name),
    ['HassTurnOn', 'HassTurnOff', 'GetLiveContext', 'HassBroken', 'HassHang', 'HassHuge'],
  );
  const on = tools.find((x) => x.name === 'HassTurnOn')!;
  t.is(on.parameters['type'], 'object');
  t.deepEqual(on.parameters['required'], ['name']);
  // Offered to every caller of the assistant: `acts` is for what acts on the board itself.
  t.true(tools.every((x) => x.acts === undefined));

  const turned = await source.call('HassTurnOn', { name: 'kitchen' }, ctx());
  t.deepEqual(turned, { ok: true, content: 'Turned on kitchen' });
  t.is(home.lights.get('kitchen'), 'on');
  const live = await source.call('GetLiveContext', {}, ctx());
  t.true(live.ok);
  t.regex(live.content, /kitchen \(light\): on/);
  t.is(source.status().state, 'connected');
});

test('a failing tool, an unknown tool and a wrong device are answered as errors naming the server', async (t) => {
  const home = await startMcpHome();
  t.teardown(() => home.close());
  const source = createMcpToolSource({ name: 'home', url: home.url, token: home.token }, fast);
  t.teardown(() => source.close());
  await source.list();

  const broken = await source.call('HassBroken', {}, ctx());
  t.false(broken.ok);
  t.regex(broken.content, /boiler is offline/);
  const unknown = await source.call('HassExplode', {}, ctx());
  t.false(unknown.ok);
  t.is(unknown.content, 'MCP server "home" (tool HassExplode): it has no tool named "HassExplode"');
  t.false(home.calls.some((c) => c.tool === 'HassExplode'));
  const wrong = await source.call('HassTurnOn', { name: 'garage' }, ctx());
  t.false(wrong.ok);
  t.regex(wrong.content, /No device named "garage"/);
});

test('a tool that hangs ends at the call budget or the turn signal, and the server hears the cancel', async (t) => {
  const home = await startMcpHome();
  t.teardown(() => home.close());
  const source = createMcpToolSource(
    { name: 'home', url: home.url, token: home.token },
    { ...fast, callTimeoutMs: 300 },
  );
  t.teardown(() => source.close());
  await source.list();

  const slow = await source.call('HassHang', {}, ctx());
  t.false(slow.ok);
  t.is(slow.content, 'MCP server "home" (tool HassHang): it did not answer within 0.3 s');
  await until(() => home.hanging === 0, 'the home to see the cancellation');

  // A patient source, so only the turn's signal can end this call.
  const patient = createMcpToolSource({ name: 'home', url: home.url, token: home.token }, fast);
  t.teardown(() => patient.close());
  await patient.list();
  const turn = new AbortController();
  const pending = patient.call('HassHang', {}, { signal: turn.signal, remote: false });
  await until(() => home.hanging === 1, 'the call to reach the home');
  turn.abort(new Error('the user said stop'));
  const cancelled = await pending;
  t.false(cancelled.ok);
  t.regex(cancelled.content, /cancelled: the user said stop/);
  // The server is still fine for the next call.
  t.true((await patient.call('HassTurnOff', { name: 'kitchen' }, ctx())).ok);
});

test('a huge result is cut with a note; one over the byte limit is refused and the session goes on', async (t) => {
  const home = await startMcpHome();
  t.teardown(() => home.close());
  const source = createMcpToolSource(
    { name: 'home', url: home.url, token: home.token },
    { ...fast, maxResultChars: 1_000, maxResponseBytes: 64 * 1024 },
  );
  t.teardown(() => source.close());
  await source.list();

  const cut = await source.call('HassHuge', { chars: 20_000 }, ctx());
  t.true(cut.ok);
  t.true(cut.content.length <= 1_000);
  t.regex(cut.content, /\[truncated: the result had 20000 characters, the limit is 1000\]$/);

  const huge = await source.call('HassHuge', { chars: 500_000 }, ctx());
  t.false(huge.ok);
  t.regex(huge.content, /^MCP server "home" \(tool HassHuge\): its answer was over 65536 bytes/);
  t.true((await source.call('GetLiveContext', {}, ctx())).ok);
});

test('a wrong token: no tools, and calls say the token was refused', async (t) => {
  const home = await startMcpHome();
  t.teardown(() => home.close());
  const source = createMcpToolSource({ name: 'home', url: home.url, token: 'wrong' }, fast);
  t.teardown(() => source.close());
  t.deepEqual(await source.list(), []);
  t.is(source.status().state, 'down');
  t.regex(source.status().lastError ?? '', /refused the token \(HTTP 401\)/);
  await until(() => source.status().retryInMs === 0 || source.status().state !== 'down', 'the backoff');
  const call = await source.call('HassTurnOn', { name: 'kitchen' }, ctx());
  t.false(call.ok);
  t.regex(call.content, /^MCP server "home" \(tool HassTurnOn\): it is not reachable at .*refused the token/);
  t.is(home.lights.get('kitchen'), 'off');
});

test('a server down at start: the turn goes on without it, and its tools arrive once it is up', async (t) => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/api/mcp`;
  const source = createMcpToolSource({ name: 'home', url, token: 'tok' }, fast);
  t.teardown(() => source.close());
  t.deepEqual(await source.list(), []);
  const down = await source.call('HassTurnOn', { name: 'kitchen' }, ctx());
  t.false(down.ok);
  t.regex(
    down.content,
    /^MCP server "home" \(tool HassTurnOn\): it is not reachable at http:\/\/127\.0\.0\.1:/,
  );

  const home = await startMcpHome({ port, token: 'tok' });
  t.teardown(() => home.close());
  await until(() => source.status().state === 'connected', 'the source to reconnect');
  t.is((await source.list()).length, 6);
  t.true((await source.call('HassTurnOn', { name: 'kitchen' }, ctx())).ok);
});

test('a server dying mid-call is reported; after its restart the forgotten session is replaced', async (t) => {
  const first = await startMcpHome({ token: 'tok' });
  const counts: number[] = [];
  const source = createMcpToolSource({ name: 'home', url: first.url, token: 'tok' }, fast, {
    onToolsChanged: (tools) => counts.push(tools.length),
  });
  t.teardown(() => source.close());
  await source.list();

  const pending = source.call('HassHang', {}, ctx());
  await until(() => first.hanging === 1, 'the call to reach the home');
  await first.close();
  const died = await pending;
  t.false(died.ok);
  t.regex(died.content, /^MCP server "home" \(tool HassHang\): /);
  // Its tools went with it, and the listener heard so.
  t.deepEqual(await source.list(), []);
  t.deepEqual(counts.slice(0, 2), [6, 0]);

  // Back on the same port with no memory of the old session: the source connects again on its own.
  const second = await startMcpHome({ port: first.port, token: 'tok' });
  t.teardown(() => second.close());
  await until(async () => (await source.call('HassTurnOn', { name: 'kitchen' }, ctx())).ok, 'a call to work');
  t.is(second.lights.get('kitchen'), 'on');

  // A restart while idle: the broken notification stream ends the session, and the next call runs on a new one.
  await second.close();
  await until(() => source.status().state !== 'connected', 'the source to see the session end');
  const third = await startMcpHome({ port: first.port, token: 'tok' });
  t.teardown(() => third.close());
  await until(() => source.status().state === 'connected', 'the source to reconnect');
  const after = await source.call('HassTurnOn', { name: 'living room' }, ctx());
  t.true(after.ok, after.content);
  t.deepEqual(
    third.calls.map((c) => c.tool),
    ['HassTurnOn'],
  );
});

test('tools/list_changed from the server refreshes the list', async (t) => {
  const home = await startMcpHome();
  t.teardown(() => home.close());
  const changes: string[][] = [];
  const source = createMcpToolSource({ name: 'home', url: home.url, token: home.token }, fast, {
    onToolsChanged: (tools) => changes.push(tools.map((x) => x.name)),
  });
  t.teardown(() => source.close());
  await source.list();
  await home.addTool('HassStartTimer', 'Starts a timer');
  await until(async () => (await source.list()).some((x) => x.name === 'HassStartTimer'), 'the new tool');
  t.true(changes.at(-1)?.includes('HassStartTimer'));
});

test('a server that changes its tools without saying so is re-listed every refreshIntervalMs', async (t) => {
  const home = await startMcpHome();
  t.teardown(() => home.close());
  const source = createMcpToolSource(
    { name: 'home', url: home.url, token: home.token },
    { ...fast, refreshIntervalMs: 100 },
  );
  t.teardown(() => source.close());
  await source.list();
  await home.addTool('HassCancelTimer', 'Cancels a timer', { notify: false });
  await until(async () => (await source.list()).some((x) => x.name === 'HassCancelTimer'), 'the refresh');
  t.is(source.status().state, 'connected');
});

test('settings that can never work are refused by name', (t) => {
  t.throws(() => createMcpToolSource({ name: '', url: 'http://x/api/mcp' }), {
    message: /voice\.tools\.mcp\[\]\.name/,
  });
  t.throws(() => createMcpToolSource({ name: 'ha', url: 'ftp://x/' }), {
    message: /voice\.tools\.mcp\[ha\]\.url/,
  });
});
