import test, { type ExecutionContext } from 'ava';
import OpenAI from 'openai';
import type {
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { EngineHostFactory } from '../../agent/runtime/engine/engine-port.js';
import { unavailableHosts } from '../../agent/runtime/module.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import type { ModelSource } from '../engine/_slots.js';
import { startOpenAiAgent } from '../helpers/openai-agent.js';
import { skipWithLine } from '../helpers/skip.js';
import { toolModel } from '../helpers/tool-model.js';

async function startAgent(t: ExecutionContext, model: ModelSource, hosts?: EngineHostFactory) {
  const id = typeof model === 'string' ? model : model.id;
  const { client } = await startOpenAiAgent(t, {
    models: [model],
    slots: { 'voice.llm': { model: id } },
    ...(hosts ? { hosts } : {}),
    timeoutMs: 120_000,
  });
  return client;
}

const TOOLS: ChatCompletionFunctionTool[] = [
  {
    type: 'function',
    function: {
      name: 'HassTurnOn',
      description: 'Turns on/opens/unlocks a device or entity',
      parameters: {
        type: 'object',
        properties: { name: { type: 'string', description: 'Name of the device or entity' } },
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'HassTurnOff',
      description: 'Turns off/closes/locks a device or entity',
      parameters: { type: 'object', properties: { name: { type: 'string' } } },
    },
  },
];

async function apiError(t: ExecutionContext, p: Promise<unknown>) {
  const err = await t.throwsAsync(p);
  t.true(err instanceof OpenAI.APIError, String(err));
  return err as InstanceType<typeof OpenAI.APIError>;
}

test('bad tool input gets a 400 naming the parameter', async (t) => {
  const client = await startAgent(t, 'tiny-llm', unavailableHosts(unavailableMessage('no engine here')));
  const user: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Turn on the light' }];
  const ask = (extra: Record<string, unknown>, messages = user) =>
    client.chat.completions.create({ model: 'tiny-llm', messages, ...extra } as never);
  const fn = TOOLS[0]?.function;
  const cases: Array<[Record<string, unknown>, string, RegExp, ChatCompletionMessageParam[]?]> = [
    [{ tools: [{ type: 'retrieval' }] }, 'tools[0].type', /"retrieval" is not supported/],
    [{ tools: [TOOLS[0], TOOLS[0]] }, 'tools[1].function.name', /duplicate/],
    [
      { tools: [{ type: 'function', function: { ...fn, parameters: [] } }] },
      'tools[0].function.parameters',
      /JSON Schema object/,
    ],
    [
      { tools: [{ type: 'function', function: { ...fn, parameters: { type: 'string' } } }] },
      'tools[0].function.parameters',
      /object/,
    ],
    [{ tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools[0].function.name', /letters/],
    [{ tools: 'HassTurnOn' }, 'tools', /array/],
    [
      { tools: TOOLS, tool_choice: { type: 'function', function: { name: 'Nope' } } },
      'tool_choice.function.name',
      /not among the tools/,
    ],
    [{ tool_choice: 'required' }, 'tool_choice', /needs tools/],
    [{ tools: TOOLS, parallel_tool_calls: 'yes' }, 'parallel_tool_calls', /boolean/],
    [
      { tools: TOOLS },
      'messages[1].tool_calls[0].function.arguments',
      /JSON object/,
      [
        ...user,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'HassTurnOn', arguments: '{nope' } }],
        },
      ],
    ],
    [
      { tools: TOOLS },
      'messages[1].tool_call_id',
      /answers no call/,
      [...user, { role: 'tool', tool_call_id: 'c9', content: 'done' }],
    ],
  ];
  for (const [extra, param, message, messages] of cases) {
    const err = await apiError(t, ask(extra, messages));
    t.is(err.status, 400, param);
    t.is(err.param, param);
    t.regex(err.message, message);
  }
});

const engine = engineAvailability();
if (!engine.available) {
  skipWithLine(`SKIP tool answers: ${unavailableMessage(engine.reason)}`);
} else {
  test('a model whose template shows no tools gets a 400 that says so', async (t) => {
    const client = await startAgent(t, 'tiny-llm');
    for (const stream of [false, true]) {
      const err = await apiError(
        t,
        client.chat.completions.create({
          model: 'tiny-llm',
          messages: [{ role: 'user', content: 'Turn on the light' }],
          tools: TOOLS,
          stream,
        }),
      );
      t.is(err.status, 400);
      t.is(err.param, 'tools');
      t.is(err.code, 'tools_not_supported');
      t.regex(
        err.message,
        /The model 'tiny-llm' does not support tools: its chat template does not show tools/,
      );
    }
  });

  const found = await loadToolModel();
  if ('skip' in found) skipWithLine(`SKIP the tool round on the scripted tool model: ${found.skip}`);
  else
    test('a whole tool round on the scripted tool model: call, result, answer; KV reused across rounds', async (t) => {
      const client = await startAgent(t, { path: found.dir, id: 'tool-model' });
      const messages: ChatCompletionMessageParam[] = [
        { role: 'system', content: 'You control the home.' },
        { role: 'user', content: 'Turn on the kitchen light' },
      ];
      // Round 1, whole: the call.
      const first = await client.chat.completions.create({ model: 'tool-model', messages, tools: TOOLS });
      const choice = first.choices[0];
      t.is(choice?.finish_reason, 'tool_calls');
      t.is(choice?.message.content, null);
      const call = choice?.message.tool_calls?.[0];
      t.is(choice?.message.tool_calls?.length, 1);
      t.is(call?.type, 'function');
      t.regex(call?.id ?? '', /^call_[A-Za-z0-9]{24}$/);
      t.is(call?.type === 'function' ? call.function.name : undefined, 'HassTurnOn');
      t.deepEqual(JSON.parse(call?.type === 'function' ? call.function.arguments : '{}'), {
        name: 'kitchen light',
      });

      // Round 1 again, streamed: the same call in deltas (head once, arguments in pieces).
      const stream = await client.chat.completions.create({
        model: 'tool-model',
        messages,
        tools: TOOLS,
        stream: true,
        stream_options: { include_usage: true },
      });
      let args = '';
      let content = '';
      const heads: Array<{ id?: string; type?: string; name?: string }> = [];
      let finish: string | null | undefined;
      let cached: number | undefined;
      for await (const chunk of stream) {
        if (chunk.usage) cached = chunk.usage.prompt_tokens_details?.cached_tokens;
        const c = chunk.choices[0];
        if (!c) continue;
        content += c.delta.content ?? '';
        for (const d of c.delta.tool_calls ?? []) {
          t.is(d.index, 0);
          if (d.id !== undefined || d.function?.name !== undefined)
            heads.push({ id: d.id, type: d.type, name: d.function?.name });
          args += d.function?.arguments ?? '';
        }
        if (c.finish_reason) finish = c.finish_reason;
      }
      t.is(heads.length, 1, 'id, type and name come once');
      t.like(heads[0], { type: 'function', name: 'HassTurnOn' });
      t.deepEqual(JSON.parse(args), { name: 'kitchen light' });
      t.is(content, '', 'no markup reaches the text');
      t.is(finish, 'tool_calls');
      // The same prompt again: the engine keeps all of it but the last two tokens (docs/ENGINE.md, Prefix reuse).
      t.true(
        (cached ?? 0) >= (first.usage?.prompt_tokens ?? Number.POSITIVE_INFINITY) - 2,
        `reused ${cached}`,
      );

      // Round 2: the result goes back; the answer is the sentence. The tools and the question are the same prefix.
      const round2: ChatCompletionMessageParam[] = [
        ...messages,
        { role: 'assistant', content: null, tool_calls: call ? [call] : [] },
        { role: 'tool', tool_call_id: call?.id ?? '', content: '{"success": true}' },
      ];
      const second = await client.chat.completions.create({
        model: 'tool-model',
        messages: round2,
        tools: TOOLS,
      });
      t.is(second.choices[0]?.finish_reason, 'stop');
      t.is(second.choices[0]?.message.content, found.finalText);
      t.is(second.choices[0]?.message.tool_calls, undefined);
      const reused = second.usage?.prompt_tokens_details?.cached_tokens ?? 0;
      t.log(`round 2: ${second.usage?.prompt_tokens} prompt tokens, ${reused} reused`);
      t.true(
        reused >= (first.usage?.prompt_tokens ?? Number.POSITIVE_INFINITY) - 2,
        'the tools and the question are not prefilled again',
      );
    });
}

/** The scripted tool model, or the line saying why it cannot be built here. */
async function loadToolModel(): Promise<{ dir: string; finalText: string } | { skip: string }> {
  const found = await toolModel();
  return found.model ? { dir: found.model.dir, finalText: found.model.finalText } : { skip: found.skip };
}
