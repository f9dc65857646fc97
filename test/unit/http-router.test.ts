import test from 'ava';
import { HttpRouter } from '../../agent/http/router.js';

const noop = () => {};

test('literal segments beat parameters, parameters beat wildcards, regardless of registration order', (t) => {
  const router = new HttpRouter();
  const files = () => {};
  const byId = () => {};
  const active = () => {};
  router.route('GET', '/api/*', files);
  router.route('GET', '/api/models/:id', byId);
  router.route('GET', '/api/models/active', active);
  t.is(router.match('GET', '/api/models/active').found?.entry.handler, active);
  const m = router.match('GET', '/api/models/qwen%2F2b');
  t.is(m.found?.entry.handler, byId);
  t.deepEqual(m.found?.params, { id: 'qwen/2b' });
  const w = router.match('GET', '/api/static/js/app.js');
  t.is(w.found?.entry.handler, files);
  t.deepEqual(w.found?.params, { '*': 'static/js/app.js' });
});

test('method mismatch reports the allowed methods; HEAD falls back to GET', (t) => {
  const router = new HttpRouter();
  const get = () => {};
  router.route('GET', '/api/things', get);
  router.route('POST', '/api/things', noop);
  const del = router.match('DELETE', '/api/things');
  t.is(del.found, undefined);
  t.deepEqual(del.allowed.sort(), ['GET', 'HEAD', 'POST']);
  t.is(router.match('HEAD', '/api/things').found?.entry.handler, get);
  t.deepEqual(router.match('GET', '/nope').allowed, []);
});

test('routes require auth unless registered with { auth: false }', (t) => {
  const router = new HttpRouter();
  router.route('GET', '/a', noop);
  router.route('GET', '/b', noop, { auth: false });
  t.true(router.match('GET', '/a').found?.entry.auth);
  t.false(router.match('GET', '/b').found?.entry.auth);
  t.false(router.match('POST', '/b').pathAuth);
});

test('duplicate and malformed registrations are refused with specific messages', (t) => {
  const router = new HttpRouter();
  router.route('GET', '/api/models/:id', noop);
  t.throws(() => router.route('GET', '/api/models/:name', noop), {
    message: 'Route GET /api/models/:name is already registered',
  });
  t.notThrows(() => router.route('DELETE', '/api/models/:id', noop));
  t.throws(() => router.route('GET', 'api', noop), { message: `Route path must start with '/', got "api"` });
  t.throws(() => router.route('GET', '/a b', noop), { message: 'Invalid route segment "a b" in "/a b"' });
  router.upgrade('/ws/voice', noop);
  t.throws(() => router.upgrade('/ws/voice', noop), {
    message: 'WebSocket endpoint /ws/voice is already registered',
  });
});

test('the remover returned by route() unregisters exactly that route', (t) => {
  const router = new HttpRouter();
  const remove = router.route('GET', '/x/:id', noop);
  router.upgrade('/ws/:channel', noop);
  t.deepEqual(router.describe(), [
    { method: 'GET', path: '/x/:id', auth: true },
    { method: 'WS', path: '/ws/:channel', auth: true },
  ]);
  remove();
  t.is(router.match('GET', '/x/1').found, undefined);
  t.deepEqual(router.matchUpgrade('/ws/vision')?.params, { channel: 'vision' });
});

test('a badly encoded parameter does not match instead of throwing', (t) => {
  const router = new HttpRouter();
  router.route('GET', '/x/:id', noop);
  t.is(router.match('GET', '/x/%E0%A4%A').found, undefined);
});
