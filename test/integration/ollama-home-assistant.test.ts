// Home Assistant's Ollama integration (homeassistant/components/ollama) against a real agent: each call it
// makes, with the headers and bodies its Python client (ollama-python, fields left out when None) sends —
// GET /api/tags (the config flow's check and model list), POST /api/pull (a model not in the list), POST
// /api/chat streamed with `tools`, `options.num_ctx`, `keep_alive` as "<seconds>s" and `think`, tool results
// sent back without an id or name, and GET /api/ps. The list is docs/HOME-ASSISTANT.md's.
import test, { type ExecutionContext } from 'ava';
import { unavailableHosts } from '../../agent/runtime/module.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { startOllamaAgent } from '../helpers/ollama-agent.js';
import { skipWithLine } from '../helpers/skip.js';

/** The headers ollama-python's AsyncClient sends with HA's API key. */
function haHeaders(token: string): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    Accept: 'application/json',
    'User-Agent': 'ollama-python/0.6.0 (x86_64 linux) Python/3.13.3',
    Authorization: `Bearer ${token}`,
  };
}

/** An NDJSON answer as ollama-python reads it: one JSON object per line. */
async function ndjson(res: Response): Promise<Array<Record<string, unknown>>> {
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Two of the tools Assist hands the LLM, in the shape HA's integration formats them. */
const HA_TOOLS = [
  {
    type: 'function',
    function: {
      name: 'HassTurnOn',
      description: 'Turns on/opens/presses a device or entity',
      parameters: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          area: { type: 'string' },
          domain: { type: 'array', items: { type: 'string', enum: ['light', 'switch', 'fan'] } },
        },
        required: [],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'GetLiveContext',
      description: 'Provides real-time information about the CURRENT state of devices',
      parameters: { type: 'object', properties: {} },
    },
  },
];

const SYSTEM = 'You are a voice assistant for Home Assistant. Answer questions about the world truthfully.';

function chatBody(messages: unknown[], extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    model: 'tiny-llm:latest',
    messages,
    tools: HA_TOOLS,
    stream: true,
    // HA's default context window; the fixture slot holds 2048, so the board caps it (as Ollama does).
    options: { num_ctx: 8192 },
    keep_alive: '-1s',
    think: false,
    ...extra,
  });
}

async function post(base: string, token: string, path: string, body: string) {
  return fetch(`${base}${path}`, { method: 'POST', headers: haHeaders(token), body });
}

const noEngine = unavailableHosts(unavailableMessage('the engine addon is not built'));

async function agent(t: ExecutionContext, withEngine: boolean) {
  return startOllamaAgent(t, withEngine ? {} : { hosts: noEngine });
}

test('HA: a wrong API key is refused in Ollama shape; a num_ctx that is no context size is refused with the reason', async (t) => {
  const { host, token } = await agent(t, false);
  const wrong = await fetch(`${host}/api/tags`, { headers: haHeaders('wrong') });
  t.is(wrong.status, 401);
  t.regex(((await wrong.json()) as { error: string }).error, /bearer token is not valid/);
  for (const [num_ctx, reason] of [
    [-1, /options\.num_ctx must not be negative \(got -1\)/],
    ['8192', /options\.num_ctx must be a number of tokens, not "8192"/],
  ] as const) {
    const bad = await post(
      host,
      token,
      '/api/chat',
      chatBody([{ role: 'user', content: 'hi' }], { options: { num_ctx } }),
    );
    t.is(bad.status, 400);
    t.regex(((await bad.json()) as { error: string }).error, reason);
  }
});

const engine = engineAvailability();
if (!engine.available) {
  skipWithLine(`SKIP Home Assistant's Ollama calls: ${unavailableMessage(engine.reason)}`);
} else {
  test("HA's config flow: GET /api/tags lists the board's models; POST /api/pull of a listed one succeeds", async (t) => {
    const { host, token } = await agent(t, true);
    const tags = await fetch(`${host}/api/tags`, { headers: haHeaders(token) });
    t.is(tags.status, 200);
    const models = ((await tags.json()) as { models: Array<{ model: string }> }).models.map((m) => m.model);
    t.deepEqual(models, ['tiny-llm:latest', 'tiny-vlm:latest']);
    const pull = await post(
      host,
      token,
      '/api/pull',
      JSON.stringify({ model: 'tiny-llm:latest', insecure: false, stream: false }),
    );
    t.is(pull.status, 200);
    t.deepEqual(await pull.json(), { status: 'success' });
  });

  test("HA's conversation: POST /api/chat streamed with HA's default num_ctx (capped), keep_alive and think; tools on a model without tool support; GET /api/ps", async (t) => {
    const { host, token, logLines } = await agent(t, true);
    // "Control Home Assistant" off: no tools in the request.
    const { tools: _, ...plain } = JSON.parse(chatBody([])) as Record<string, unknown>;
    const first = await post(
      host,
      token,
      '/api/chat',
      JSON.stringify({
        ...plain,
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'Turn on the kitchen light' },
        ],
      }),
    );
    t.is(first.status, 200);
    t.is(first.headers.get('content-type'), 'application/x-ndjson');
    const lines = await ndjson(first);
    t.true(lines.length > 2);
    const last = lines.at(-1)!;
    t.is(last['done'], true);
    t.true(['stop', 'length'].includes(last['done_reason'] as string));
    t.true(lines.slice(0, -1).every((l) => l['done'] === false && l['model'] === 'tiny-llm:latest'));
    // Every line parses as HA reads it: message.role and message.content on each.
    for (const l of lines) t.is((l['message'] as { role: string }).role, 'assistant');
    // HA's default num_ctx 8192 is served within the slot's 2048, said on the last line (not an error).
    t.regex(
      String(last['warning']),
      /options\.num_ctx 8192 is more than the 2048-token context tiny-llm is loaded with .*capped to 2048/,
    );
    t.true(lines.slice(0, -1).every((l) => l['warning'] === undefined));

    // "Control Home Assistant" on, with Assist's tools and a tool round as HA sends it back (the result without
    // tool_call_id or tool_name): tiny-llm's template has no tool support, which the answer says (400), as
    // Ollama does for such a model. A whole tool round on MNN is the tool-call fixture model's test.
    const withTools = await post(
      host,
      token,
      '/api/chat',
      chatBody([
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Turn on the kitchen light' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { function: { name: 'HassTurnOn', arguments: { name: 'kitchen light', domain: ['light'] } } },
          ],
        },
        { role: 'tool', content: '{"success": true, "targets": ["light.kitchen"]}' },
      ]),
    );
    t.is(withTools.status, 400);
    t.regex(((await withTools.json()) as { error: string }).error, /tool/i);

    // Sent every turn, the cap is logged once for the model and value.
    const capped = logLines.filter((l) => l.includes('requested context size too large'));
    t.is(capped.length, 1, capped.join('\n'));
    t.regex(capped[0]!, /"numCtx":8192/);

    const ps = await fetch(`${host}/api/ps`, { headers: haHeaders(token) });
    const loaded = ((await ps.json()) as { models: Array<{ model: string; expires_at: string }> }).models;
    t.true(loaded.some((m) => m.model === 'tiny-llm:latest'));
  });
}
