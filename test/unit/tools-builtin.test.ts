import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { parseConfig } from '../../agent/config/load.js';
import { redactConfig } from '../../agent/config/redact.js';
import { type ToolsConfig, toolsDefaults } from '../../agent/config/sections/tools.js';
import { openStore } from '../../agent/store/database.js';
import { resolveVoiceConfig } from '../../agent/workloads/config.js';
import { BoardSpeaker } from '../../agent/workloads/tools/board-speaker.js';
import { BuiltinTools, spokenDuration } from '../../agent/workloads/tools/builtin.js';
import { type Timer, TimerService } from '../../agent/workloads/tools/timers.js';
import type { ToolOutcome } from '../../agent/workloads/tools/types.js';
import { until } from '../helpers/until.js';

function expectOutcome(t: ExecutionContext, r: ToolOutcome, ok: boolean, content: RegExp): void {
  t.is(r.ok, ok, r.content);
  t.regex(r.content, content);
}

const local = { signal: new AbortController().signal, remote: false };
const remote = { signal: new AbortController().signal, remote: true };

function tempDb(t: { teardown(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-timers-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'agent.db');
}

test('timers persist across a store reopen; one that came due meanwhile fires at start, late', async (t) => {
  const path = tempDb(t);
  let now = 1_700_000_000_000;
  const db1 = openStore(path);
  const first = new TimerService(db1, { now: () => now, maxTimers: () => 5 });
  first.start();
  const pasta = first.set({ durationMs: 10 * 60_000, label: 'pasta', setBy: 'local' });
  const tea = first.set({ durationMs: 60 * 60_000, label: 'tea', setBy: 'local' });
  first.stop();
  db1.close();

  now += 20 * 60_000; // the agent was down for twenty minutes
  const fired: Array<[Timer, boolean]> = [];
  const db2 = openStore(path);
  const second = new TimerService(db2, {
    now: () => now,
    maxTimers: () => 5,
    onFire: (tm, late) => fired.push([tm, late]),
  });
  t.deepEqual(
    second.running().map((x) => x.label),
    ['pasta', 'tea'],
  );
  second.start();
  t.is(fired.length, 1);
  t.like(fired[0]![0], { id: pasta.id, label: 'pasta', state: 'fired' });
  t.true(fired[0]![1], 'fired late');
  t.deepEqual(
    second.running().map((x) => x.id),
    [tea.id],
  );
  t.like(second.events()[0], { type: 'fired', id: pasta.id, late: true });
  second.stop();
  db2.close();
});

test('a timer fires when due, once; a cancelled one does not', async (t) => {
  const db = openStore(':memory:');
  const fired: string[] = [];
  const timers = new TimerService(db, {
    now: Date.now,
    maxTimers: () => 5,
    onFire: (tm) => fired.push(tm.label),
  });
  timers.start();
  t.teardown(() => timers.stop());
  timers.set({ durationMs: 1000, label: 'soon', setBy: 'local' });
  const later = timers.set({ durationMs: 1000, label: 'cancelled', setBy: 'local' });
  t.like(timers.cancel(later.id), { state: 'cancelled' });
  t.is(timers.cancel(later.id), undefined, 'a second cancel finds nothing running');
  await until(() => fired.length > 0, 'the timer to fire');
  await new Promise((r) => setTimeout(r, 1200));
  t.deepEqual(fired, ['soon']);
  t.deepEqual(
    timers
      .events()
      .map((e) => `${e.type}:${e.label}`)
      .sort(),
    ['cancelled:cancelled', 'fired:soon', 'set:cancelled', 'set:soon'],
  );
});

test('timer limits: duration and count are refused with the reason', (t) => {
  const db = openStore(':memory:');
  const timers = new TimerService(db, { now: Date.now, maxTimers: () => 1 });
  t.throws(() => timers.set({ durationMs: 10, setBy: 'x' }), { message: /at least 1 second/ });
  t.throws(() => timers.set({ durationMs: 30 * 86_400_000, setBy: 'x' }), { message: /at most 7 days/ });
  timers.set({ durationMs: 5000, setBy: 'x' });
  t.throws(() => timers.set({ durationMs: 5000, setBy: 'x' }), { message: /voice\.tools\.maxTimers/ });
});

function builtin(
  overrides: Partial<ToolsConfig> = {},
  extra: { speaker?: BoardSpeaker; camera?: boolean } = {},
) {
  const db = openStore(':memory:');
  const settings: ToolsConfig = { ...toolsDefaults, ...overrides };
  const timers = new TimerService(db, { now: () => Date.UTC(2026, 11, 7, 16, 30), maxTimers: () => 5 });
  const tools = new BuiltinTools({
    settings: () => settings,
    now: () => Date.UTC(2026, 11, 7, 16, 30),
    timers,
    ...(extra.speaker ? { speaker: extra.speaker } : {}),
    ...(extra.camera
      ? {
          camera: {
            missing: () => undefined,
            describe: async (q: string) => `a cat on a sofa (asked: ${q})`,
          },
        }
      : {}),
  });
  return { tools, timers, settings };
}

test('get_time answers on the board clock in the configured zone', async (t) => {
  const { tools } = builtin({ timezone: 'Europe/Berlin' });
  const r = await tools.call('get_time', {}, local);
  t.true(r.ok);
  t.regex(r.content, /Monday, December 7, 2026 at 5:30\s?PM \(Europe\/Berlin\)/);
  const bad = await builtin({ timezone: 'Mars/Olympus' }).tools.call('get_time', {}, local);
  t.true(bad.ok, 'an unknown zone falls back to the board zone');
});

test('timer tools: set, list, cancel by label, and bad arguments answered with the reason', async (t) => {
  const { tools, timers } = builtin({ timezone: 'UTC' });
  const set = await tools.call('set_timer', { minutes: 5, label: 'pasta' }, local);
  t.true(set.ok);
  t.regex(set.content, /Timer "pasta" \(id \w+\) set for 5 minutes; it ends at 4:35\s?PM/);
  t.is(timers.running()[0]?.setBy, 'local');
  t.regex((await tools.call('list_timers', {}, local)).content, /pasta \(id \w+\): 5 minutes left/);
  expectOutcome(t, await tools.call('set_timer', {}, local), false, /needs a duration/);
  expectOutcome(
    t,
    await tools.call('set_timer', { minutes: 'soon' }, local),
    false,
    /minutes must be a number/,
  );
  expectOutcome(
    t,
    await tools.call('cancel_timer', { label: 'eggs' }, local),
    false,
    /no running timer matches/,
  );
  t.like(await tools.call('cancel_timer', { label: 'Pasta' }, local), {
    ok: true,
    content: 'Timer "pasta" cancelled.',
  });
  t.is(timers.running().length, 0);
  t.is(spokenDuration(3_900_000), '1 hour 5 minutes');
});

test('what is listed follows the settings and what can serve now', async (t) => {
  const names = async (b: BuiltinTools) => (await b.list()).map((d) => d.name);
  t.deepEqual(await names(builtin().tools), ['get_time', 'set_timer', 'list_timers', 'cancel_timer']);
  const speaker = new BoardSpeaker();
  speaker.attach({ say: () => {}, idle: async () => {} });
  t.deepEqual(await names(builtin({}, { speaker, camera: true }).tools), [
    'get_time',
    'set_timer',
    'list_timers',
    'cancel_timer',
    'describe_camera',
    'announce',
  ]);
  const off = builtin(
    { builtins: { time: false, timers: false, camera: false, announce: true } },
    { speaker, camera: true },
  );
  t.deepEqual(await names(off.tools), ['announce']);
  expectOutcome(t, await off.tools.call('get_time', {}, local), false, /switched off/);
  const cam = builtin({}, { camera: true });
  t.like(await cam.tools.call('describe_camera', { question: 'any pets?' }, local), {
    ok: true,
    content: 'a cat on a sofa (asked: any pets?)',
  });
});

test('announce acts on the board: said after the running turn, refused for remote callers unless allowed', async (t) => {
  const said: string[] = [];
  let release!: () => void;
  const busy = new Promise<void>((r) => {
    release = r;
  });
  const speaker = new BoardSpeaker();
  speaker.attach({ say: (text) => said.push(text), idle: () => busy });
  const { tools } = builtin({}, { speaker });
  expectOutcome(
    t,
    await tools.call('announce', { text: 'Dinner is ready' }, remote),
    false,
    /remote callers/,
  );
  t.like(await tools.call('announce', { text: 'Dinner is ready' }, local), { ok: true });
  t.deepEqual(said, [], 'waits for the running turn');
  release();
  await until(() => said.length === 1, 'the announcement');
  t.deepEqual(said, ['Dinner is ready']);
  const allowed = builtin({ allowRemoteActs: true }, { speaker }).tools;
  t.like(await allowed.call('announce', { text: 'hi' }, remote), { ok: true });
});

test('voice.tools: the schema takes MCP servers and limits, refuses bad ones, and `config` masks the tokens', (t) => {
  const raw = {
    voice: {
      tools: {
        limits: { maxRounds: 3, callTimeoutMs: 5000 },
        mcp: [{ name: 'ha', url: 'http://homeassistant.local:8123/api/mcp', token: 'long-lived-secret' }],
      },
    },
  };
  const config = parseConfig(raw, 'test');
  const tools = resolveVoiceConfig(config['voice']).tools;
  t.like(tools, { enabled: true, limits: { maxRounds: 3, callTimeoutMs: 5000, maxResultBytes: 8192 } });
  t.is(tools.mcp[0]?.token, 'long-lived-secret');
  t.deepEqual((redactConfig(config) as typeof raw).voice.tools.mcp[0], {
    name: 'ha',
    url: 'http://homeassistant.local:8123/api/mcp',
    token: '***',
  });
  t.throws(() => parseConfig({ voice: { tools: { limits: { maxRounds: 0 } } } }, 'test'), {
    message: /maxRounds/,
  });
  t.throws(() => parseConfig({ voice: { tools: { mcp: [{ name: 'ha', url: 'ftp://x' }] } } }, 'test'), {
    message: /url/,
  });
});
