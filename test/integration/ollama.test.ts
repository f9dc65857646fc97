// The Ollama-compatible API on a real agent (HTTP on loopback, real SQLite), driven by the official `ollama` npm
// client. The models are the fixture exports imported into the agent's model store and placed on slots by the
// runtime. Error paths and the listener on Ollama's port run everywhere (hosts that cannot start stand in for a
// missing MNN); answers need the engine and run in engine hosts (skipped with one line without).
// Home Assistant's own calls, as its integration sends them, are in ollama-home-assistant.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { Ollama } from 'ollama';
import { unavailableHosts } from '../../agent/runtime/module.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { startOllamaAgent } from '../helpers/ollama-agent.js';
import { mediaFixturesDir, modelFixturesDir } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';

const framePng = readFileSync(join(mediaFixturesDir, 'camera-seq', 'frame-000.png'));

const noEngineReason = unavailableMessage('the engine addon is not built');
const noEngine = unavailableHosts(noEngineReason);

/** The client's error for a failed call: its message and the HTTP status. */
async function failure(t: ExecutionContext, call: Promise<unknown>) {
  const err = (await t.throwsAsync(call)) as Error & { status_code?: number };
  return { status: err.status_code, message: err.message };
}

test('without the engine nothing is listed; a wrong key gets 401 with a message the client shows', async (t) => {
  const { client, host } = await startOllamaAgent(t, { hosts: noEngine });
  t.deepEqual((await client.list()).models, []);
  t.deepEqual((await client.ps()).models, []);
  t.deepEqual(await client.version(), { version: '0.12.0' });
  const wrong = new Ollama({ host, headers: { Authorization: 'Bearer not-the-token' } });
  const err = await failure(t, wrong.list());
  t.is(err.status, 401);
  t.regex(err.message, /The bearer token is not valid/);
  t.is((await failure(t, new Ollama({ host }).list())).status, 401);
});

test('bad requests get Ollama-shaped errors with its status codes', async (t) => {
  const { client } = await startOllamaAgent(t, { hosts: noEngine });
  const hi = [{ role: 'user', content: 'hi' }];
  const cases: Array<[Promise<unknown>, number, RegExp]> = [
    [
      client.chat({ model: 'llama3.2', messages: hi }),
      404,
      /^model "llama3\.2" not found, try pulling it first$/,
    ],
    [client.show({ model: 'gpt-9:latest' }), 404, /^model "gpt-9:latest" not found, try pulling it first$/],
    [
      client.chat({ model: 'tiny-llm', messages: hi, keep_alive: 'soon' }),
      400,
      /keep_alive "soon" is not a duration/,
    ],
    [
      client.chat({ model: 'tiny-llm', messages: hi, options: { num_ctx: -2048 } }),
      400,
      /options\.num_ctx must not be negative \(got -2048\)/,
    ],
    [
      client.chat({ model: 'tiny-llm', messages: hi, format: 'json' }),
      400,
      /format \(structured output\) is not supported/,
    ],
    [
      client.chat({
        model: 'tiny-llm',
        messages: hi,
        tools: [{ type: 'function', function: { name: '', parameters: {} } }] as never,
      }),
      400,
      /tools\[0\]\.function\.name must be a non-empty string/,
    ],
    [
      client.chat({ model: 'tiny-llm', messages: [{ role: 'wizard', content: 'x' }] }),
      400,
      /messages\[0\]\.role/,
    ],
    [
      client.chat({ model: 'tiny-vlm', messages: [{ role: 'user', content: 'x', images: ['%%%'] }] }),
      400,
      /messages\[0\]\.images\[0\] is not base64/,
    ],
    [client.pull({ model: 'llama3.2' }), 400, /cannot be pulled here: .*hf:\/\/owner\/name/],
  ];
  for (const [call, status, message] of cases) {
    const err = await failure(t, call);
    t.is(err.status, status, err.message);
    t.regex(err.message, message);
  }
  // A model that cannot answer now says why (503) rather than that it does not exist.
  const err = await failure(t, client.chat({ model: 'tiny-llm:latest', messages: hi }));
  t.is(err.status, 503);
  t.is(err.message, noEngineReason);
});

test("the listener on Ollama's port answers like Ollama, relays only the Ollama API and keeps to its allow-list", async (t) => {
  const { listenerPort, token } = await startOllamaAgent(t, { hosts: noEngine, listener: {} });
  t.truthy(listenerPort);
  const base = `http://127.0.0.1:${listenerPort}`;
  const root = await fetch(`${base}/`);
  t.is(root.status, 200);
  t.is(await root.text(), 'Ollama is running');
  const client = new Ollama({ host: base, headers: { Authorization: `Bearer ${token}` } });
  t.deepEqual(await client.version(), { version: '0.12.0' });
  t.deepEqual((await client.list()).models, []);
  // Still the agent's auth, and nothing of the agent but the Ollama API.
  t.is((await failure(t, new Ollama({ host: base }).list())).status, 401);
  const other = await fetch(`${base}/api/runtime`, { headers: { Authorization: `Bearer ${token}` } });
  t.is(other.status, 404);
  t.deepEqual(await other.json(), { error: 'No Ollama endpoint at /api/runtime' });

  const fenced = await startOllamaAgent(t, { hosts: noEngine, listener: { allow: ['192.0.2.0/24'] } });
  const refused = await fetch(`http://127.0.0.1:${fenced.listenerPort}/api/tags`, {
    headers: { Authorization: `Bearer ${fenced.token}` },
  });
  t.is(refused.status, 403);
  t.deepEqual(await refused.json(), { error: 'Client 127.0.0.1 is not in ollama.listener.allow' });
});

const engine = engineAvailability();
if (!engine.available) {
  skipWithLine(`SKIP Ollama answers: ${unavailableMessage(engine.reason)}`);
} else {
  const expected = (
    JSON.parse(readFileSync(join(modelFixturesDir, 'expected-outputs.json'), 'utf8')) as {
      cases: Array<{ model: string; prompt: string; text: string }>;
    }
  ).cases.find((c) => c.model === 'tiny-llm' && c.prompt === 'Hello')!;

  test('list, show and ps name the models as clients send them back', async (t) => {
    const { client } = await startOllamaAgent(t);
    const list = await client.list();
    t.deepEqual(
      list.models.map((m) => [m.name, m.model, m.details.format]),
      [
        ['tiny-llm:latest', 'tiny-llm:latest', 'mnn'],
        ['tiny-vlm:latest', 'tiny-vlm:latest', 'mnn'],
      ],
    );
    const show = await client.show({ model: list.models[1]!.model });
    // No 'tools': tiny-vlm's chat template does not show tools, so a request with tools would be refused.
    t.deepEqual(show.capabilities, ['completion', 'vision']);
    t.is((show.model_info as unknown as Record<string, unknown>)['mnn.context_length'], 2048);
    // Without a tag, and with the placed version as its tag, the name means the same model.
    t.deepEqual((await client.show({ model: 'tiny-llm' })).capabilities, ['completion']);
    t.deepEqual((await client.show({ model: 'tiny-llm:1.0.0' })).capabilities, ['completion']);
    const ps = await client.ps();
    t.deepEqual(
      ps.models.map((m) => m.model),
      ['tiny-llm:latest', 'tiny-vlm:latest'],
    );
    t.true(new Date(ps.models[0]!.expires_at).getUTCFullYear() > 2200, 'kept loaded');
  });

  test('chat and generate answer whole and streamed as NDJSON, with counts', async (t) => {
    const { client } = await startOllamaAgent(t);
    const hello = [{ role: 'user', content: 'Hello' }];
    const whole = await client.chat({ model: 'tiny-llm:latest', messages: hello, stream: false });
    t.is(whole.message.content, expected.text);
    t.is(whole.done_reason, 'length');
    t.is(whole.prompt_eval_count, 9);
    t.is(whole.eval_count, 32);
    t.is(whole.model, 'tiny-llm:latest');

    const pieces: string[] = [];
    let last: { done: boolean; done_reason: string; eval_count: number } | undefined;
    for await (const part of await client.chat({ model: 'tiny-llm', messages: hello, stream: true })) {
      pieces.push(part.message.content);
      last = part;
    }
    t.true(pieces.length > 2, 'streamed in pieces');
    t.is(pieces.join(''), expected.text);
    t.is(last?.done, true);
    t.is(last?.done_reason, 'length');
    t.is(last?.eval_count, 32);

    const generated = await client.generate({ model: 'tiny-llm', prompt: 'Hello', stream: false });
    t.is(generated.response, expected.text);
    let streamed = '';
    for await (const part of await client.generate({ model: 'tiny-llm', prompt: 'Hello', stream: true }))
      streamed += part.response;
    t.is(streamed, expected.text);
    // num_predict bounds the answer.
    const short = await client.chat({ model: 'tiny-llm', messages: hello, options: { num_predict: 3 } });
    t.is(short.eval_count, 3);
    // num_ctx above the slot's 2048 is capped to it, as Ollama caps one above the model's: the same answer, and
    // the last line says so beside Ollama's fields.
    const capped = await client.chat({
      model: 'tiny-llm',
      messages: hello,
      stream: false,
      options: { num_ctx: 8192, num_predict: 32 },
    });
    t.is(capped.message.content, expected.text);
    t.regex(
      String((capped as unknown as Record<string, unknown>)['warning']),
      /options\.num_ctx 8192 is more than the 2048-token context tiny-llm is loaded with .*slots\.voice\.llm\.contextTokens.*capped to 2048/,
    );
  });

  test('tiny-vlm takes base64 images; a second request while the slot is busy gets 429', async (t) => {
    const { client } = await startOllamaAgent(t);
    const answer = await client.chat({
      model: 'tiny-vlm:latest',
      messages: [{ role: 'user', content: 'Hello', images: [framePng.toString('base64')] }],
      options: { num_predict: 4 },
    });
    // 18 image tokens on top of the 9 of "Hello" (fixtures README).
    t.is(answer.prompt_eval_count, 27);
    t.is(answer.eval_count, 4);
    const viaGenerate = await client.generate({
      model: 'tiny-vlm',
      prompt: 'Hello',
      images: [new Uint8Array(framePng)],
      options: { num_predict: 4 },
    });
    t.is(viaGenerate.prompt_eval_count, 27);
    // tiny-llm takes no images.
    const refused = await failure(
      t,
      client.chat({
        model: 'tiny-llm',
        messages: [{ role: 'user', content: 'x', images: [framePng.toString('base64')] }],
      }),
    );
    t.is(refused.status, 400);
    t.regex(refused.message, /does not accept images/);

    const long = await client.chat({
      model: 'tiny-vlm',
      messages: [{ role: 'user', content: 'Hello' }],
      stream: true,
      options: { num_predict: 1800 },
    });
    const iterator = long[Symbol.asyncIterator]();
    await iterator.next();
    const busy = await failure(
      t,
      client.chat({ model: 'tiny-vlm', messages: [{ role: 'user', content: 'Hi' }] }),
    );
    t.is(busy.status, 429);
    t.regex(busy.message, /The vision\.vlm model is busy/);
    long.abort();
  });

  test('keep_alive 0 unloads the model after the answer; the next request loads it again', async (t) => {
    const { client, runtime } = await startOllamaAgent(t);
    const hello = [{ role: 'user', content: 'Hello' }];
    await client.chat({ model: 'tiny-llm', messages: hello, keep_alive: 0, options: { num_predict: 2 } });
    // The unload runs once the answer went out; the runtime drains and stops the host.
    for (let i = 0; i < 400 && runtime()?.isParked('voice.llm') !== true; i++)
      await new Promise((r) => setTimeout(r, 25));
    t.true(runtime()?.isParked('voice.llm'));
    t.deepEqual(
      (await client.ps()).models.map((m) => m.model),
      ['tiny-vlm:latest'],
    );
    // Still listed: it loads on demand.
    t.true((await client.list()).models.some((m) => m.model === 'tiny-llm:latest'));
    const again = await client.chat({ model: 'tiny-llm', messages: hello, keep_alive: '5m' });
    t.is(again.message.content, expected.text);
    t.true(again.load_duration > 0, 'the answer says it waited for a load');
    const ps = await client.ps();
    const entry = ps.models.find((m) => m.model === 'tiny-llm:latest');
    t.truthy(entry);
    const left = new Date(entry!.expires_at).getTime() - Date.now();
    t.true(left > 0 && left <= 5 * 60_000, `expires within 5 minutes (${left} ms)`);

    // `ollama stop`: a generate with no prompt and keep_alive 0; and a load with no prompt.
    const stop = await client.generate({ model: 'tiny-llm', prompt: '', keep_alive: 0 });
    t.is(stop.done_reason, 'unload');
    t.true(runtime()?.isParked('voice.llm'));
    const load = await client.generate({ model: 'tiny-llm', prompt: '' });
    t.is(load.done_reason, 'load');
    t.false(runtime()?.isParked('voice.llm'));
  });

  test('pull of a model the board already serves succeeds at once, streamed', async (t) => {
    const { client } = await startOllamaAgent(t);
    const lines: string[] = [];
    for await (const p of await client.pull({ model: 'tiny-llm:latest', stream: true })) lines.push(p.status);
    t.deepEqual(lines, ['pulling manifest', 'success']);
    t.is((await client.pull({ model: 'tiny-llm' })).status, 'success');
  });
}
