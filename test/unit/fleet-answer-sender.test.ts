import test from 'ava';
import { AnswerSender } from '../../agent/fleet/answer-sender.js';
import { CommandServer } from '../../agent/fleet/command-server.js';
import { CommandRegistry } from '../../agent/fleet/commands.js';
import type { Clock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';

// A command's answer lost with its connection (a cluster node that closed it before the PUBACK) goes out again
// on the next connection while the requester still waits, and only then.

let now = 1_700_000_000_000;
const clock: Clock = { monotonicMs: () => now, nowMs: () => now };

/** A connection whose publishes fail while `up` is false, as the agent's does once its link closed. */
function fakeConnection() {
  const sent: string[] = [];
  const conn = {
    up: true,
    v5: false,
    async publish(topic: string, payload: string): Promise<void> {
      if (!conn.up) throw new Error('connection closed before the broker acknowledged');
      sent.push(`${topic} ${payload}`);
    },
  };
  return { conn, sent };
}

const settle = () => new Promise((r) => setImmediate(r));

async function answerTo(expiresAt: number | undefined) {
  const registry = new CommandRegistry();
  registry.register({ name: 'ping', summary: '', handler: () => 'pong' });
  const server = new CommandServer({
    registry,
    self: { deviceId: 'd1', tags: [] },
    maxPayloadBytes: 4096,
    clock,
    logger: createMemoryLogger(),
  });
  const request = { v: 1, id: 'r1', params: {}, ...(expiresAt !== undefined ? { expiresAt } : {}) };
  const out = await server.handle({
    topic: 'mnn-edge/d1/cmd/ping',
    payload: Buffer.from(JSON.stringify(request)),
  });
  if (!out) throw new Error('no answer');
  return out;
}

test('the command server passes the request deadline on with its answer', async (t) => {
  t.is((await answerTo(now + 5_000)).expiresAt, now + 5_000);
  t.false('expiresAt' in (await answerTo(undefined)));
});

test('an answer lost with its connection goes out again on the next one, once', async (t) => {
  const { conn, sent } = fakeConnection();
  const answers = new AnswerSender(conn, clock, createMemoryLogger());
  conn.up = false;
  answers.send(await answerTo(now + 5_000));
  await settle();
  t.is(answers.pending, 1);
  t.deepEqual(sent, []);
  conn.up = true;
  answers.resend();
  await settle();
  t.is(sent.length, 1);
  t.regex(sent[0]!, /^mnn-edge\/d1\/responses .*"id":"r1"/);
  answers.resend();
  await settle();
  t.is(sent.length, 1, 'sent once the broker acknowledged it');
});

test('an answer whose requester stopped waiting, or that had no deadline, is not kept', async (t) => {
  const { conn, sent } = fakeConnection();
  const answers = new AnswerSender(conn, clock, createMemoryLogger());
  conn.up = false;
  answers.send(await answerTo(undefined));
  answers.send(await answerTo(now + 1_000));
  await settle();
  t.is(answers.pending, 1);
  now += 2_000;
  conn.up = true;
  answers.resend();
  await settle();
  t.deepEqual(sent, []);
  t.is(answers.pending, 0);
});
