// A whole tool round on real MNN through the paths Home Assistant uses, with the scripted tool-call model
// (engine/tools/tool-model: a call to HassTurnOn {"name": "kitchen light"} when the latest turn is the user's,
// "The kitchen light is on." after a tool result) rendered through its own Qwen2.5 template:
// - the Ollama API with the official `ollama` client, the way Home Assistant's Ollama integration sends it (the
//   call arrives whole in one chunk, the tool result goes back without id or name);
// - the board's own acting assistant (the typed chat, and Wyoming `handle`; the voice loop answers through the same
//   assistant) calling a Home Assistant-like MCP server made with the MCP SDK: the light really switches.
import test, { type ExecutionContext } from 'ava';
import { Ollama } from 'ollama';
import type { AgentConfig } from '../../agent/config/schema.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { type McpHome, startMcpHome } from '../helpers/mcp-home.js';
import { toolModel } from '../helpers/tool-model.js';
import { startWorkloadsAgent } from '../helpers/workloads-agent.js';
import { WyomingTestClient } from '../helpers/wyoming-client.js';

const found = await toolModel();
if (found.skip) console.log(`tool-round: skipped, ${found.skip}`);
const gate = found.model ? test.serial : test.skip;

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'HassTurnOn',
      description: 'Turns on/opens/unlocks a device or entity',
      parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    },
  },
];

async function until(cond: () => Promise<boolean>, budgetMs: number): Promise<boolean> {
  const deadline = Date.now() + budgetMs;
  while (Date.now() < deadline) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return cond();
}

async function startAgent(t: ExecutionContext, home?: McpHome, wyoming = false) {
  const model = found.model!;
  const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-tool-round-');
  const config: AgentConfig = {
    ...base,
    slots: { 'voice.llm': { model: 'tool-model' } },
    voice: {
      maxNewTokens: 64,
      tools: { mcp: home ? [{ name: 'home', url: home.url, token: home.token }] : [] },
    },
    ...(wyoming ? { wyoming: { enabled: true, bind: '127.0.0.1', port: 0 } } : {}),
  };
  const { port, token, workloads } = await startWorkloadsAgent(t, {
    dataDir,
    config,
    models: [{ path: model.dir, id: 'tool-model' }],
  });
  // The MCP client connects in the background: its tools join the built-in ones once listed.
  const listed =
    home === undefined ||
    (await until(
      async () => (await workloads.assistant()!.assistant.catalog()).entries.has('HassTurnOn'),
      60_000,
    ));
  return { url: `http://127.0.0.1:${port}`, token, workloads, listed };
}

gate(
  'Ollama API: the call comes whole in one chunk, and the tool result without id or name gets the answer',
  async (t) => {
    t.timeout(300_000);
    const { url, token } = await startAgent(t);
    const client = new Ollama({ host: url, headers: { Authorization: `Bearer ${token}` } });
    const ask = { role: 'user', content: 'Turn on the kitchen light' };
    const parts = [];
    for await (const part of await client.chat({
      model: 'tool-model',
      messages: [ask],
      tools: TOOLS,
      stream: true,
    }))
      parts.push(part);
    const withCalls = parts.filter((p) => (p.message.tool_calls?.length ?? 0) > 0);
    t.is(withCalls.length, 1, 'one chunk carries the call');
    const call = withCalls[0]!.message.tool_calls![0]!;
    t.is(call.function.name, 'HassTurnOn');
    t.deepEqual(call.function.arguments, { name: 'kitchen light' });
    t.false(
      parts.some((p) => p.message.content.includes('<tool_call>')),
      'no tool markup reaches the text',
    );
    t.true(parts.at(-1)!.done);

    // Home Assistant sends the call back in the assistant message and the result as a bare tool message.
    const answer = await client.chat({
      model: 'tool-model',
      stream: false,
      tools: TOOLS,
      messages: [
        ask,
        { role: 'assistant', content: '', tool_calls: [call] },
        { role: 'tool', content: '{"success": true}' },
      ],
    });
    t.is(answer.message.content, found.model!.finalText);
    t.falsy(answer.message.tool_calls?.length);
  },
);

gate(
  'the acting assistant calls an MCP server: the kitchen light switches and the answer says so',
  async (t) => {
    t.timeout(300_000);
    const home = await startMcpHome({ lights: { 'kitchen light': 'off' } });
    t.teardown(() => home.close());
    const { url, token, listed } = await startAgent(t, home);
    t.true(listed, 'the home server tools are listed');
    const r = await fetch(`${url}/api/assistant/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Turn on the kitchen light' }] }),
    });
    t.is(r.status, 200);
    const events = (await r.text())
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const call = events.find((e) => e['type'] === 'tool_call');
    t.like(call, { name: 'HassTurnOn', arguments: { name: 'kitchen light' } });
    t.like(
      events.find((e) => e['type'] === 'tool_result'),
      { id: call?.['id'], ok: true },
    );
    t.is(home.lights.get('kitchen light'), 'on', 'the MCP server switched the light');
    const text = events
      .filter((e) => e['type'] === 'text')
      .map((e) => e['text'])
      .join('');
    t.is(text.trim(), found.model!.finalText);
    t.like(events.at(-1), { type: 'done', finishReason: 'stop' });
  },
);

gate(
  'Wyoming handle: a transcript Home Assistant hands the board switches a light through the same assistant',
  async (t) => {
    t.timeout(300_000);
    const home = await startMcpHome({ lights: { 'kitchen light': 'off' } });
    t.teardown(() => home.close());
    const { workloads, listed } = await startAgent(t, home, true);
    t.true(listed, 'the home server tools are listed');
    const port = workloads.wyomingAnnouncement()?.port;
    if (port === undefined) return t.fail('the Wyoming server is not listening');
    const c = await WyomingTestClient.connect(port);
    t.teardown(() => c.socket.destroy());
    c.send('transcript', { text: 'Turn on the kitchen light', context: { conversation_id: 'kitchen' } });
    const handled = await c.next('handled');
    t.is(String(handled.data['text']).trim(), found.model!.finalText);
    t.deepEqual(handled.data['context'], { conversation_id: 'kitchen' });
    t.is(home.lights.get('kitchen light'), 'on', 'the MCP server switched the light');
  },
);
