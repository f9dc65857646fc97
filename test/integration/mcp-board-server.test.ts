// The board's MCP server (POST /mcp) on a real agent, driven by the SDK's own Client over streamable HTTP with
// the pairing token as bearer: the tool list, the status tool, announce kept from remote clients unless enabled,
// refusals in MCP's shape. The camera tools answer with tiny-vlm on a camera that is a PNG file (MNN needed:
// skipped with one line without).
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import test, { type ExecutionContext } from 'ava';
import type { AgentConfig } from '../../agent/config/schema.js';
import { unavailableHosts } from '../../agent/runtime/module.js';
import type { BoardMcpOptions } from '../../agent/workloads/board-mcp.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';
import { startWorkloadsAgent } from '../helpers/workloads-agent.js';

const camera = join(mediaFixturesDir, 'camera-seq', 'frame-000.png');
const noEngine = unavailableHosts(unavailableMessage('the engine addon is not built'));

async function startAgent(t: ExecutionContext, opts: { engine: boolean; mcp?: BoardMcpOptions }) {
  const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-mcp-');
  const config: AgentConfig = {
    ...base,
    slots: { 'vision.vlm': { model: 'tiny-vlm' } },
    vision: { camera, maxNewTokens: 8 },
    voice: { output: { sink: 'wav', device: 'default' } },
  };
  const { port, token } = await startWorkloadsAgent(t, {
    dataDir,
    config,
    models: ['tiny-vlm'],
    hosts: opts.engine ? undefined : noEngine,
    workloadsDeps: (runtime) => ({
      mcpServer: { status: () => ({ slots: runtime()?.state() ? 'running' : 'none' }), ...opts.mcp },
    }),
  });
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  return { url, token };
}

async function connect(t: ExecutionContext, url: URL, token: string): Promise<Client> {
  const client = new Client({ name: 'mcp-board-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  t.teardown(() => client.close());
  return client;
}

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  const content = result.content as Array<{ type: string; text?: string }>;
  return content.map((c) => c.text ?? '').join('');
}

test('the SDK client lists the board tools; announce is kept from remote clients; status answers', async (t) => {
  const { url, token } = await startAgent(t, { engine: false });
  const client = await connect(t, url, token);
  t.is(client.getServerVersion()?.name, 'mnn-edge');
  const { tools } = await client.listTools();
  t.deepEqual(
    tools.map((x) => x.name),
    ['camera_describe', 'camera_ask', 'board_status'],
  );
  t.deepEqual(tools.find((x) => x.name === 'camera_ask')!.inputSchema.required, ['question']);

  const status = await client.callTool({ name: 'board_status', arguments: {} });
  t.falsy(status.isError);
  t.deepEqual(status.structuredContent, { slots: 'running' });

  const announce = await client.callTool({ name: 'announce', arguments: { text: 'Dinner is ready' } });
  t.true(announce.isError);
  t.regex(textOf(announce), /acts on the board and is off for remote clients/);
  const unknown = await client.callTool({ name: 'launch', arguments: {} });
  t.true(unknown.isError);
  t.is(textOf(unknown), 'The board has no tool "launch"');
});

test('without a vision model the camera tools say why; bad arguments are named', async (t) => {
  const { url, token } = await startAgent(t, { engine: false });
  const client = await connect(t, url, token);
  const ask = await client.callTool({ name: 'camera_ask', arguments: { question: 'Is the door open?' } });
  t.true(ask.isError);
  t.regex(textOf(ask), /^The camera cannot be asked now: /);
  const empty = await client.callTool({ name: 'camera_ask', arguments: { question: '' } });
  t.true(empty.isError);
  t.is(textOf(empty), '"question" must be a non-empty string');
});

test('announce enabled for remote clients is listed, and a board that cannot speak says why', async (t) => {
  const { url, token } = await startAgent(t, { engine: false, mcp: { announceForRemote: true } });
  const client = await connect(t, url, token);
  const { tools } = await client.listTools();
  const announceTool = tools.find((x) => x.name === 'announce');
  t.truthy(announceTool);
  t.false(announceTool!.annotations?.readOnlyHint);
  const said = await client.callTool({ name: 'announce', arguments: { text: 'Dinner is ready' } });
  t.true(said.isError);
  t.regex(textOf(said), /^announce failed: /);
});

test('a wrong token is refused before MCP starts, and GET has no stream (405)', async (t) => {
  const { url, token } = await startAgent(t, { engine: false });
  const client = new Client({ name: 'mcp-board-test', version: '1.0.0' });
  const err = await t.throwsAsync(
    client.connect(
      new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: 'Bearer nope' } } }),
    ),
  );
  t.regex(err.message, /401|invalid_token|bearer token is not valid/i);
  const get = await fetch(url, {
    headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' },
  });
  t.is(get.status, 405);
  t.is(get.headers.get('allow'), 'POST');
});

const engine = engineAvailability();
if (!engine.available) {
  skipWithLine(`SKIP MCP camera answers: ${unavailableMessage(engine.reason)}`);
} else {
  test('camera_describe and camera_ask answer with tiny-vlm on a frame taken now', async (t) => {
    const { url, token } = await startAgent(t, { engine: true });
    const client = await connect(t, url, token);
    // A VLM on a busy CI machine: MCP's default 60 s request timeout is not the point of this test.
    const patient = { timeout: 600_000 };
    const described = await client.callTool({ name: 'camera_describe', arguments: {} }, undefined, patient);
    t.falsy(described.isError, textOf(described));
    t.true(textOf(described).length > 0);
    const asked = await client.callTool(
      { name: 'camera_ask', arguments: { question: 'What colour is it?' } },
      undefined,
      patient,
    );
    t.falsy(asked.isError, textOf(asked));
    t.true(textOf(asked).length > 0);
  });
}
