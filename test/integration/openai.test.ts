// The OpenAI-compatible API on a real agent (HTTP on loopback, real SQLite), driven by the `openai` npm client.
// The models are the fixture exports imported into the agent's model store and placed on slots by the runtime.
// Error paths run everywhere (hosts that cannot start stand in for a missing MNN); answers need the engine and
// run in engine hosts (skipped with one line without).
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import OpenAI from 'openai';
import type { EngineHostFactory } from '../../agent/runtime/engine/engine-port.js';
import { unavailableHosts } from '../../agent/runtime/module.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { startOpenAiAgent } from '../helpers/openai-agent.js';
import { mediaFixturesDir, modelFixturesDir } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';

const framePng = readFileSync(join(mediaFixturesDir, 'camera-seq', 'frame-000.png'));

function startAgent(t: ExecutionContext, hosts?: EngineHostFactory) {
  return startOpenAiAgent(t, {
    models: ['tiny-llm', 'tiny-omni-audio', 'tiny-vlm'],
    slots: {
      'voice.llm': { model: 'tiny-llm' },
      'voice.asr': { model: 'tiny-omni-audio' },
      'vision.vlm': { model: 'tiny-vlm' },
    },
    config: { vision: { concurrency: 1, maxQueued: 0, retryAfterS: 7 } },
    ...(hosts ? { hosts } : {}),
  });
}

const noEngineReason = unavailableMessage('the engine addon is not built');
const noEngine = unavailableHosts(noEngineReason);

test('without the engine no model is listed (none could answer); a wrong key is refused', async (t) => {
  const { client, baseURL } = await startAgent(t, noEngine);
  t.deepEqual((await client.models.list()).data, []);
  const wrong = new OpenAI({ baseURL, apiKey: 'not-the-token', maxRetries: 0 });
  const err = await t.throwsAsync(wrong.models.list());
  t.true(err instanceof OpenAI.AuthenticationError);
});

test('without the engine, completions answer 503 in OpenAI error shape', async (t) => {
  const { client } = await startAgent(t, noEngine);
  const err = await t.throwsAsync(
    client.chat.completions.create({ model: 'tiny-llm', messages: [{ role: 'user', content: 'Hello' }] }),
  );
  t.true(err instanceof OpenAI.APIError);
  const api = err as InstanceType<typeof OpenAI.APIError>;
  t.is(api.status, 503);
  t.is(api.type, 'service_unavailable');
  t.is(api.code, 'engine_unavailable');
  t.is(api.message, `503 ${noEngineReason}`);
});

test('bad requests get specific OpenAI-shaped errors', async (t) => {
  const { client } = await startAgent(t, noEngine);
  const cases: Array<[() => Promise<unknown>, number, string | null, RegExp]> = [
    [
      () => client.chat.completions.create({ model: 'tiny-llm', messages: [] }),
      400,
      'messages',
      /messages must be a non-empty array/,
    ],
    [
      () => client.chat.completions.create({ model: 'gpt-9', messages: [{ role: 'user', content: 'hi' }] }),
      404,
      'model',
      /The model 'gpt-9' does not exist on this device/,
    ],
    [
      () =>
        client.chat.completions.create({
          model: 'tiny-vlm',
          messages: [
            {
              role: 'user',
              content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }],
            },
          ],
        }),
      400,
      'messages[0].content[0].image_url.url',
      /must be a data URL .*the device does not fetch remote images/,
    ],
    [
      () =>
        client.chat.completions.create({
          model: 'tiny-vlm',
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What is this?' },
                {
                  type: 'image_url',
                  image_url: {
                    url: `data:image/png;base64,${Buffer.from('not an image').toString('base64')}`,
                  },
                },
              ],
            },
          ],
        }),
      400,
      'messages[0].content[1].image_url.url',
      /Frame is not an image: expected PNG, JPEG, BMP, WebP or GIF data/,
    ],
    [
      () =>
        client.chat.completions.create({
          model: 'tiny-llm',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 0,
        }),
      400,
      'max_tokens',
      /max_tokens must be a positive integer/,
    ],
  ];
  for (const [call, status, param, message] of cases) {
    const err = (await t.throwsAsync(call())) as InstanceType<typeof OpenAI.APIError>;
    t.is(err.status, status, err.message);
    t.is(err.param, param);
    t.regex(err.message, message);
  }
});

test('a 50 MB upload is refused with 413 before it is read', async (t) => {
  const { baseURL, token } = await startAgent(t, noEngine);
  const url = new URL(`${baseURL}/chat/completions`);
  const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json',
          'Content-Length': String(50 * 1024 * 1024),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.write('{"model":"tiny-vlm","messages":[');
    // The rest of the 50 MB never needs to be sent: the declared length alone is refused.
  });
  t.is(response.status, 413);
  const body = JSON.parse(response.body) as { error: { message: string; type: string; code: string } };
  t.is(body.error.type, 'invalid_request_error');
  t.is(body.error.code, 'payload_too_large');
  t.is(body.error.message, 'Request body exceeds the limit of 20971520 bytes (http.maxUploadBytes)');
});

const engine = engineAvailability();
if (!engine.available) {
  skipWithLine(`SKIP OpenAI answers: ${unavailableMessage(engine.reason)}`);
} else {
  test('the models that serve are listed, each once', async (t) => {
    const { client } = await startAgent(t);
    const list = await client.models.list();
    t.deepEqual(
      list.data.map((m) => [m.id, m.object, m.owned_by]),
      [
        ['tiny-llm', 'model', 'mnn-edge'],
        ['tiny-vlm', 'model', 'mnn-edge'],
      ],
    );
  });

  /** The counts of a 9-token prompt and 32 generated tokens. The engine may have kept the KV of part of the
   *  prompt from an earlier generation (the warm-up's, or the previous request's): OpenAI's
   *  prompt_tokens_details.cached_tokens says how much, and never the whole prompt (the last tokens are always
   *  prefilled to get the first token's logits). */
  const usageIs = (
    t: ExecutionContext,
    usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | undefined,
  ) => {
    const { prompt_tokens_details: details, ...counts } = (usage ?? {}) as Record<string, unknown> & {
      prompt_tokens_details?: { cached_tokens?: number };
    };
    t.deepEqual(counts, { prompt_tokens: 9, completion_tokens: 32, total_tokens: 41 });
    if (details !== undefined) {
      const cached = details.cached_tokens;
      t.true(
        Number.isInteger(cached) && cached! > 0 && cached! < 9,
        `cached_tokens ${String(cached)} is a part of the 9-token prompt`,
      );
    }
  };

  test('tiny-llm answers through the API: whole, and streamed in order with usage', async (t) => {
    const { client } = await startAgent(t);
    const expected = (
      JSON.parse(readFileSync(join(modelFixturesDir, 'expected-outputs.json'), 'utf8')) as {
        cases: Array<{
          model: string;
          prompt: string;
          text: string;
          image: string | null;
          audio?: string | null;
        }>;
      }
    ).cases.find((c) => c.model === 'tiny-llm' && c.prompt === 'Hello')!;
    const whole = await client.chat.completions.create({
      model: 'tiny-llm',
      messages: [{ role: 'user', content: 'Hello' }],
    });
    t.is(whole.object, 'chat.completion');
    t.is(whole.choices[0]!.message.content, expected.text);
    t.is(whole.choices[0]!.finish_reason, 'length');
    usageIs(t, whole.usage);

    const stream = await client.chat.completions.create({
      model: 'tiny-llm',
      messages: [{ role: 'user', content: 'Hello' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    const finishes: Array<string | null> = [];
    let usage: unknown;
    for await (const chunk of stream) {
      t.is(chunk.object, 'chat.completion.chunk');
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.delta.content) pieces.push(c.delta.content);
        finishes.push(c.finish_reason);
      }
    }
    t.true(pieces.length > 1, 'streamed in more than one piece');
    t.is(pieces.join(''), expected.text);
    t.is(finishes.at(-1), 'length');
    t.true(finishes.slice(0, -1).every((f) => f === null));
    usageIs(t, usage as typeof whole.usage);
  });

  test('tiny-vlm takes an image_url data URL; a second request while the slot is busy gets 429 + Retry-After', async (t) => {
    const { client } = await startAgent(t);
    const image = `data:image/png;base64,${framePng.toString('base64')}`;
    const answer = await client.chat.completions.create({
      model: 'tiny-vlm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: image } },
            { type: 'text', text: 'Hello' },
          ],
        },
      ],
      max_tokens: 4,
    });
    // 18 image tokens (vision_start + 16 pads + vision_end) on top of the 9 of "Hello" (fixtures README).
    t.is(answer.usage?.prompt_tokens, 27);
    t.is(answer.usage?.completion_tokens, 4);

    const controller = new AbortController();
    const long = await client.chat.completions.create(
      { model: 'tiny-vlm', messages: [{ role: 'user', content: 'Hello' }], stream: true, max_tokens: 1800 },
      { signal: controller.signal },
    );
    const iterator = long[Symbol.asyncIterator]();
    await iterator.next();
    const busy = (await t.throwsAsync(
      client.chat.completions.create({ model: 'tiny-vlm', messages: [{ role: 'user', content: 'Hi' }] }),
    )) as InstanceType<typeof OpenAI.APIError>;
    t.is(busy.status, 429);
    t.is(busy.headers?.get('retry-after'), '7');
    t.regex(busy.message, /The vision\.vlm model is busy: 1 running and 0 waiting; retry in 7 s/);
    // Disconnecting cancels the generation and frees the slot for the next request.
    controller.abort();
    await iterator.return?.();
    // The server notices the disconnect at the next token; until then the slot may still answer 429.
    for (let attempt = 0; ; attempt++) {
      try {
        const after = await client.chat.completions.create({
          model: 'tiny-vlm',
          messages: [{ role: 'user', content: 'Hi' }],
          max_tokens: 2,
        });
        t.is(after.usage?.completion_tokens, 2);
        break;
      } catch (err) {
        if (!(err instanceof OpenAI.RateLimitError) || attempt >= 100) throw err;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  });
}
