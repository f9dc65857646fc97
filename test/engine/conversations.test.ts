// Several conversations on one instance: with conversation snapshots each keeps the KV of its own prefix while
// they interleave (hit), without them each turn falls back to what the conversations share (the system prompt),
// and a conversation whose context was given up says so (evicted). Every reply equals, token for token, the reply
// to the same conversation prefilled whole.
import test from 'ava';
import {
  type ChatMessage,
  type ConversationOptions,
  EngineHostClient,
  type GenerationResult,
  Llm,
} from '../../engine/index.js';
import { MnnEdgeError } from '../../lib/errors.js';
import { createMemoryLogger } from '../../lib/log.js';
import { engineOrSkip, models } from './_engine.js';

const SYSTEM = 'You are a helpful assistant.';
const OPENERS = ['Hello, who are you?', 'What is the capital of France?', 'Tell me a joke about boards.'];
const FOLLOW_UPS = ['And then?', 'Why is that?', 'Say it shorter.', 'One more, please.'];
const MiB = 1024 * 1024;

interface Conversation {
  history: ChatMessage[];
}

interface Reply {
  conversation: number;
  turn: number;
  result: GenerationResult;
  reference: GenerationResult;
}

/**
 * `rounds` turns of each of `count` conversations, interleaved (A1 B1 A2 B2 …) on `llm`; each request carries its
 * whole conversation, and `reference` answers the same request with a full prefill.
 */
async function interleave(llm: Llm, reference: Llm, count: number, rounds: number, order?: number[][]) {
  const conversations: Conversation[] = Array.from({ length: count }, () => ({ history: [] }));
  const replies: Reply[] = [];
  const schedule = order ?? Array.from({ length: rounds }, () => [...Array(count).keys()]);
  for (const round of schedule) {
    for (const c of round) {
      const conv = conversations[c]!;
      const turn = conv.history.length / 2;
      conv.history.push({
        role: 'user',
        content: turn === 0 ? OPENERS[c % OPENERS.length]! : FOLLOW_UPS[(turn - 1) % FOLLOW_UPS.length]!,
      });
      const messages: ChatMessage[] = [{ role: 'system', content: SYSTEM }, ...conv.history];
      const result = await llm.complete(messages, { maxNewTokens: 10 });
      const full = await reference.complete(messages, { maxNewTokens: 10, reusePrefix: false });
      conv.history.push({ role: 'assistant', content: result.text });
      replies.push({ conversation: c, turn, result, reference: full });
    }
  }
  return replies;
}

function assertIdentical(t: import('ava').ExecutionContext, replies: Reply[]): void {
  for (const r of replies) {
    const where = `conversation ${r.conversation} turn ${r.turn + 1}`;
    t.true((r.result.stats.outputIds?.length ?? 0) > 0, `${where}: generated something`);
    t.deepEqual([...r.result.stats.outputIds!], [...r.reference.stats.outputIds!], `${where}: token ids`);
    t.is(r.result.text, r.reference.text, `${where}: text`);
    t.is(r.result.stats.promptTokens, r.reference.stats.promptTokens, `${where}: prompt tokens`);
  }
}

const SNAPSHOTS: ConversationOptions = { max: 3, budgetBytes: 256 * MiB };

// Serial, as multimodal.test.ts: one model works at a time, as in the product (one engine host per model). With
// these tests running at once, glibc aborted this file once in CI ("double free or corruption (fasttop)", x86);
// where is open, as it is for multimodal.test.ts (the tenth closing note).
if (engineOrSkip(test, 'conversations')) {
  for (const [name, config] of [
    ['tiny-llm', models.tinyLlm],
    ['tiny-llm-int4', models.tinyLlmInt4],
  ] as const) {
    test.serial(
      `${name}: two interleaved conversations each keep their prefix with snapshots, equal to full prefills`,
      async (t) => {
        await using llm = await Llm.load(config, { conversations: SNAPSHOTS });
        await using reference = await Llm.load(config);
        const replies = await interleave(llm, reference, 2, 4);
        assertIdentical(t, replies);
        for (const r of replies) {
          const reuse = r.result.stats.reuse!;
          const where = `conversation ${r.conversation} turn ${r.turn + 1}`;
          t.is(reuse.contexts?.context, r.conversation, `${where}: its own context`);
          if (r.turn === 0) {
            t.is(reuse.contexts?.route, 'new', where);
            t.is(reuse.outcome, 'miss', where);
            t.is(reuse.reason, 'cold', where);
          } else {
            t.is(reuse.contexts?.route, 'own', where);
            t.is(reuse.outcome, 'hit', where);
            // A hit keeps the whole previous prompt of this conversation.
            const previous = replies.find((p) => p.conversation === r.conversation && p.turn === r.turn - 1)!;
            t.is(reuse.reusedTokens, previous.result.stats.promptTokens, where);
          }
        }
        const last = replies.at(-1)!.result.stats.reuse!.contexts!;
        t.is(last.count, 2);
        t.true(last.snapshotBytes > 0, 'the extra context is counted');
        t.true(last.snapshotBytes <= last.budgetBytes);
      },
    );
  }

  test.serial(
    'without snapshots, interleaved conversations fall back to what they share and say so',
    async (t) => {
      await using llm = await Llm.load(models.tinyLlm);
      await using reference = await Llm.load(models.tinyLlm);
      const replies = await interleave(llm, reference, 2, 3);
      assertIdentical(t, replies);
      for (const r of replies.slice(1)) {
        const reuse = r.result.stats.reuse!;
        // Each turn finds the other conversation's prompt: only the system prompt's tokens are kept.
        t.is(reuse.outcome, 'partial');
        t.is(reuse.reason, 'diverged');
        t.is(reuse.contexts?.route, 'only');
        t.true(reuse.reusedTokens > 0, 'the system prompt is kept');
      }
    },
  );

  test.serial(
    'a third conversation over the count takes over the least recently used context: evicted, still exact',
    async (t) => {
      await using llm = await Llm.load(models.tinyLlm, { conversations: { max: 2, budgetBytes: 256 * MiB } });
      await using reference = await Llm.load(models.tinyLlm);
      // A1 B1, C1 (takes A's context), A2 (takes B's: A was evicted), B2 (evicted too).
      const replies = await interleave(llm, reference, 3, 0, [[0, 1], [2], [0], [1]]);
      assertIdentical(t, replies);
      const c1 = replies[2]!.result.stats.reuse!;
      t.is(c1.contexts?.route, 'lru');
      t.is(c1.contexts?.count, 2);
      const a2 = replies[3]!.result.stats.reuse!;
      t.is(a2.reason, 'evicted');
      t.not(a2.outcome, 'hit');
      t.is(replies[4]!.result.stats.reuse!.reason, 'evicted');
      t.true(replies[4]!.result.stats.reuse!.contexts!.evictions >= 3);
    },
  );

  test.serial(
    'a byte budget too small for a context keeps one: conversations fall back, evicted',
    async (t) => {
      await using llm = await Llm.load(models.tinyLlm, { conversations: { max: 4, budgetBytes: 0 } });
      await using reference = await Llm.load(models.tinyLlm);
      const replies = await interleave(llm, reference, 2, 2);
      assertIdentical(t, replies);
      // No extra context fits in 0 bytes: each conversation takes over the other's.
      for (const r of replies) t.is(r.result.stats.reuse!.contexts!.count, 1);
      t.is(replies[2]!.result.stats.reuse!.reason, 'evicted');
      t.true(replies.every((r) => r.result.stats.reuse!.contexts!.snapshotBytes === 0));
    },
  );

  test.serial(
    'dropSnapshots() frees the extra contexts; the next turns are exact and say evicted',
    async (t) => {
      await using llm = await Llm.load(models.tinyLlm, { conversations: SNAPSHOTS });
      await using reference = await Llm.load(models.tinyLlm);
      const before = await interleave(llm, reference, 2, 2);
      assertIdentical(t, before);
      t.is(before.at(-1)!.result.stats.reuse!.contexts!.count, 2);
      const freed = await llm.dropSnapshots();
      t.true(freed > 0, `freed ${freed} bytes`);
      // Conversation 1 ran last, in the extra context that was dropped; conversation 0 is still held.
      const messages: ChatMessage[] = [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: OPENERS[1]! },
        { role: 'assistant', content: before[1]!.result.text },
        { role: 'user', content: FOLLOW_UPS[0]! },
        { role: 'assistant', content: before[3]!.result.text },
        { role: 'user', content: FOLLOW_UPS[1]! },
      ];
      const after = await llm.complete(messages, { maxNewTokens: 10 });
      const full = await reference.complete(messages, { maxNewTokens: 10, reusePrefix: false });
      t.deepEqual([...after.stats.outputIds!], [...full.stats.outputIds!]);
      t.is(after.stats.reuse!.reason, 'evicted');
      t.is(after.stats.reuse!.contexts!.count, 2, 'a new context was made for it again');
    },
  );

  test.serial(
    'through an engine host: load with conversations, each keeps its context, drop-snapshots frees them',
    async (t) => {
      await using host = await EngineHostClient.start({
        name: 'conversations',
        logger: createMemoryLogger(),
      });
      await host.load(models.tinyLlm, {}, SNAPSHOTS);
      const a: ChatMessage[] = [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: OPENERS[0]! },
      ];
      const b: ChatMessage[] = [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: OPENERS[1]! },
      ];
      const a1 = await host.complete(a, { maxNewTokens: 6 });
      const b1 = await host.complete(b, { maxNewTokens: 6 });
      const a2 = await host.complete(
        [...a, { role: 'assistant', content: a1.text }, { role: 'user', content: FOLLOW_UPS[0]! }],
        { maxNewTokens: 6 },
      );
      t.is(b1.stats.reuse?.contexts?.route, 'new');
      t.is(a2.stats.reuse?.outcome, 'hit');
      t.is(a2.stats.reuse?.contexts?.context, 0);
      t.is(a2.stats.reuse?.contexts?.count, 2);
      t.true((await host.dropSnapshots()) > 0);
      t.is(await host.dropSnapshots(), 0, 'nothing left to drop');
    },
  );

  test.serial('prepare: the contexts are made at load; a new conversation then waits for none', async (t) => {
    await using llm = await Llm.load(models.tinyLlm, { conversations: { ...SNAPSHOTS, prepare: true } });
    t.true((llm.loadTiming.contextsMs ?? -1) >= 0);
    await using reference = await Llm.load(models.tinyLlm);
    const replies = await interleave(llm, reference, 3, 2);
    assertIdentical(t, replies);
    for (const r of replies) {
      const c = r.result.stats.reuse!.contexts!;
      t.is(c.count, 3);
      t.is(c.createUs, 0, 'no context was made during a turn');
      t.is(c.context, r.conversation);
    }
    t.is(replies.at(-1)!.result.stats.reuse!.outcome, 'hit');
  });

  test.serial('conversations: bad limits are refused with what was expected', async (t) => {
    const err = await t.throwsAsync(
      () => Llm.load(models.tinyLlm, { conversations: { max: 0, budgetBytes: 1 } }),
      {
        instanceOf: MnnEdgeError,
      },
    );
    t.regex(err!.message, /conversations\.max/);
    t.regex(err!.message, /an integer from 1 to 64/);
    const neg = await t.throwsAsync(
      () => Llm.load(models.tinyLlm, { conversations: { max: 2, budgetBytes: -1 } }),
      { instanceOf: MnnEdgeError },
    );
    t.regex(neg!.message, /conversations\.budgetBytes/);
    const prep = await t.throwsAsync(
      () => Llm.load(models.tinyLlm, { conversations: { max: 2, budgetBytes: 1, prepare: 'yes' as never } }),
      { instanceOf: MnnEdgeError },
    );
    t.regex(prep!.message, /conversations\.prepare/);
  });

  test.serial('an omni model (vision) keeps one context: snapshots do not apply to it', async (t) => {
    await using llm = await Llm.load(models.tinyVlm, { conversations: SNAPSHOTS });
    const r = await llm.complete('Hello', { maxNewTokens: 4 });
    t.is(r.stats.reuse!.contexts!.max, 1);
    t.is(r.stats.reuse!.contexts!.route, 'only');
  });
}
