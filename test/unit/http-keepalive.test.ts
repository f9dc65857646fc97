import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { KEEP_ALIVE_MS } from '../../agent/http/server.js';
import { loopbackRouter } from './loopback-router.js';

// A kept-alive connection idle for longer than Node's default 5 s is still the agent's to answer on: clients
// close idle connections first (httpx's expiry is 5 s, aiohttp's 15 s), so no request of theirs meets our close.

function exchange(port: number) {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  let closed = false;
  socket.setEncoding('utf8').on('data', (c: string) => (received += c));
  socket.on('close', () => (closed = true));
  const answers = async (n: number) => {
    for (let i = 0; i < 600 && (received.match(/HTTP\/1\.1 200/g) ?? []).length < n && !closed; i++)
      await sleep(50);
    return (received.match(/HTTP\/1\.1 200/g) ?? []).length;
  };
  const get = () => socket.write('GET /ping HTTP/1.1\r\nHost: agent\r\nConnection: keep-alive\r\n\r\n');
  return { socket, get, answers, text: () => received, closed: () => closed };
}

test('an idle kept-alive connection still gets answers after 7 s, and the agent says how long it keeps it', async (t) => {
  const loop = loopbackRouter(t);
  loop.router.route('GET', '/ping', (ctx) => ctx.json(200, { ok: true }));
  const base = await loop.listen();
  const c = exchange(Number(new URL(base).port));
  t.teardown(() => c.socket.destroy());
  c.get();
  t.is(await c.answers(1), 1, c.text());
  t.regex(c.text(), new RegExp(`Keep-Alive: timeout=${KEEP_ALIVE_MS / 1000}`, 'i'));
  // Past Node's default keep-alive (5 s), which closed this connection before.
  await sleep(7_000);
  t.false(c.closed(), 'the agent closed an idle kept-alive connection after 7 s');
  c.get();
  t.is(await c.answers(2), 2, c.text());
});
