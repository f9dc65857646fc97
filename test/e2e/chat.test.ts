// The dashboard's typed conversation against the real daemon (`mnn-edge run`, tiny-llm the only model placed)
// in real Chromium: the Voice page cannot talk without ASR, the Chat page can; the answer streams in with any
// tool calls, an image goes with its message, "New conversation" starts over; the timers panel lists the
// assistant's timers; the Settings page holds the tool sources, with MCP tokens written but never read back.
// POST /api/assistant/chat comes with the acting assistant: until an agent has it (it answers 404) this file
// skips, saying so.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest from 'ava';
import type { Page, Request } from 'playwright-core';
import { OVERLAY_FILE } from '../../agent/config/overlay-store.js';
import type { AssistantChatRequest, AssistantTimersAnswer } from '../../agent/dashboard-api/wire.js';
import { STORE_FILE } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelStore } from '../../models/index.js';
import { mediaFixturesDir, modelFixturesDir } from '../helpers/paths.js';
import { type AgentDaemon, startAgentDaemon } from '../helpers/run-agent.js';
import { skipWithLine } from '../helpers/skip.js';
import { until } from '../helpers/until.js';
import { buildDashboard, launchChromium, login, screenshot } from './harness.js';

const test = anyTest;
const CHAT = '/api/assistant/chat';
const run = {} as {
  dir: string;
  dataDir: string;
  daemon: AgentDaemon;
  browser: Awaited<ReturnType<typeof launchChromium>>;
  page: Page;
};

/** The daemon with tiny-llm on voice.llm and nothing else placed, serving. */
async function startWithOnlyAnLlm(): Promise<void> {
  buildDashboard();
  run.dir = mkdtempSync(join(tmpdir(), 'mnn-edge-e2e-chat-'));
  run.dataDir = join(run.dir, 'data');
  mkdirSync(run.dataDir);
  const db = openStore(join(run.dataDir, STORE_FILE), { migrations: allMigrations });
  const { store } = ModelStore.open({ dataDir: run.dataDir, db, log: createMemoryLogger() });
  await store.import(join(modelFixturesDir, 'tiny-llm'), { version: '1.0.0' });
  store.close();
  db.close();
  run.daemon = await startAgentDaemon(run.dataDir, {
    slots: { 'voice.llm': { model: 'tiny-llm' } },
    voice: { maxNewTokens: 24 },
  });
  await until(
    async () => {
      const p = await run.daemon.call('GET', '/api/placement');
      const states = (p.body as { slotStates: Array<{ slot: string; phase: string }> }).slotStates;
      return states.find((s) => s.slot === 'voice.llm')?.phase === 'serving';
    },
    'voice.llm serving tiny-llm',
    { timeoutMs: 180_000, stepMs: 250 },
  );
}

async function stopAll(): Promise<void> {
  await run.browser?.close();
  await run.daemon?.stop();
  if (run.dir) rmSync(run.dir, { recursive: true, force: true });
}

/** Why this file cannot run here, or undefined: no engine, or an agent without the typed chat. */
async function whySkip(): Promise<string | undefined> {
  const a = engineAvailability();
  if (!a.available) return unavailableMessage(a.reason);
  await startWithOnlyAnLlm();
  // An empty request: a 400 from the chat's own checks says the route is there, without running the model.
  const probe = await fetch(`${run.daemon.url}${CHAT}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${run.daemon.token}`, 'Content-Type': 'application/json' },
    body: '{}',
  });
  await probe.body?.cancel();
  if (probe.status !== 404) return undefined;
  await stopAll();
  return `POST ${CHAT} answered 404: this agent has no acting assistant yet`;
}

/** The next chat request the page sends, parsed. */
async function nextChatRequest(page: Page, send: () => Promise<void>): Promise<AssistantChatRequest> {
  const [req] = await Promise.all([
    page.waitForRequest((r: Request) => r.url().endsWith(CHAT) && r.method() === 'POST'),
    send(),
  ]);
  return req.postDataJSON() as AssistantChatRequest;
}

/** The last answer on the page once it has finished (done, or an error it shows), with a generous budget. */
async function finishedAnswer(page: Page): Promise<{ state: string; text: string }> {
  const last = page.getByTestId('chat-answer').last();
  await page.waitForFunction(
    () => {
      const all = document.querySelectorAll('[data-testid="chat-answer"]');
      const s = all[all.length - 1]?.getAttribute('data-state');
      return s !== undefined && s !== null && s !== 'streaming';
    },
    undefined,
    { timeout: 180_000 },
  );
  return { state: (await last.getAttribute('data-state')) ?? '', text: (await last.textContent()) ?? '' };
}

const skip = await whySkip();
if (skip) {
  skipWithLine(`SKIP dashboard chat: ${skip}`, anyTest);
} else {
  test.before(async () => {
    run.browser = await launchChromium(join(mediaFixturesDir, 'speech-hello-16k.wav'));
    run.page = await run.browser.context.newPage();
    await login(run.page, run.daemon.url, run.daemon.token);
  });
  test.after.always(stopAll);

  test.serial(
    'with only an LLM placed the Voice page cannot talk, the Chat page can: the answer streams in',
    async (t) => {
      const { daemon, page } = run;
      await page.goto(`${daemon.url}/#/voice`);
      await page.getByTestId('voice-unavailable').waitFor();
      await page.goto(`${daemon.url}/#/chat`);
      const input = page.getByTestId('chat-input');
      await input.fill('What time is it?');
      const sent = await nextChatRequest(page, () => input.press('Enter'));
      t.deepEqual(sent.messages, [{ role: 'user', content: 'What time is it?' }]);
      t.regex(sent.conversationId ?? '', /^chat-[0-9a-f]{32}$/);
      t.false('images' in sent);
      const answer = await finishedAnswer(page);
      t.is(answer.state, 'done', answer.text);
      t.regex((await page.getByTestId('chat-done').last().textContent()) ?? '', /^Finished: /);
      // Whatever the model chose to call is shown with its arguments and its result.
      const calls = page.getByTestId('tool-call');
      for (let i = 0; i < (await calls.count()); i++) {
        const call = calls.nth(i);
        t.not(await call.getAttribute('data-tool'), null);
        t.is(await call.getByTestId('tool-arguments').count(), 1);
        t.is(await call.getByTestId('tool-result').count(), 1, 'a finished answer has every result');
      }
      t.true(
        (await page.getByTestId('chat-text').count()) + (await calls.count()) > 0,
        'the answer said or did something',
      );
      t.is(await page.getByTestId('chat-send').isDisabled(), false, 'ready for the next message');
      await screenshot(page, 'chat-answer');
    },
  );

  test.serial(
    'an image goes with its message only; "New conversation" starts over with a new id',
    async (t) => {
      const { page } = run;
      const first = await nextChatRequest(page, async () => {
        await page.getByTestId('chat-image').setInputFiles(join(mediaFixturesDir, 'test_red_64x64.png'));
        await page.getByTestId('chat-pending-image').waitFor();
        await page.getByTestId('chat-input').fill('What colour is this picture?');
        await page.getByTestId('chat-send').click();
      });
      t.is(first.images?.length, 1);
      t.true(first.images![0]!.startsWith('data:image/png;base64,'));
      t.is(first.messages.length, 3, 'the first question, its answer and this one');
      t.is(await page.getByTestId('chat-pending-image').count(), 0, 'the tray is empty once sent');
      const answer = await finishedAnswer(page);
      // tiny-llm is no vision model: the agent may answer or refuse the image; either is said, not hidden.
      t.true(answer.state === 'done' || (answer.state === 'error' && answer.text.length > 0), answer.text);

      await page.getByTestId('chat-new').click();
      t.is(await page.getByTestId('chat-answer').count(), 0);
      await page.getByTestId('chat-input').fill('Hello again.');
      const fresh = await nextChatRequest(page, () => page.getByTestId('chat-send').click());
      t.deepEqual(fresh.messages, [{ role: 'user', content: 'Hello again.' }]);
      t.not(fresh.conversationId, first.conversationId);
      t.false('images' in fresh);
      await finishedAnswer(page);
    },
  );

  test.serial('the timers panel lists the assistant timers the API lists', async (t) => {
    const { daemon, page } = run;
    const listed = await daemon.call('GET', '/api/assistant/timers');
    t.is(listed.status, 200);
    const timers = (listed.body as AssistantTimersAnswer).timers.filter((x) => x.state === 'running');
    await page.goto(`${daemon.url}/#/chat`);
    await page.getByTestId('timers').waitFor();
    await until(
      async () => (await page.getByTestId('timer').count()) === timers.length,
      'the panel showing the listed timers',
      { timeoutMs: 20_000, stepMs: 100 },
    );
    for (const timer of timers)
      t.regex(
        (await page.locator(`[data-testid="timer"][data-id="${timer.id}"]`).textContent()) ?? '',
        new RegExp(timer.label || 'Timer'),
      );
    if (timers.length === 0)
      t.regex((await page.getByTestId('timers').textContent()) ?? '', /No timers running/);
  });

  test.serial(
    'Settings holds the tool sources: an MCP server token is written, kept when left, and never read back',
    async (t) => {
      const { daemon, page, dataDir } = run;
      const overlay = () => readFileSync(join(dataDir, OVERLAY_FILE), 'utf8');
      await page.goto(`${daemon.url}/#/settings`);
      await page.getByTestId('setting-voice.tools.limits.maxRounds').waitFor();
      for (const k of ['time', 'timers', 'camera', 'announce'])
        t.is(await page.getByTestId(`setting-voice.tools.builtins.${k}`).count(), 1, k);
      await page.getByTestId('setting-voice.tools.limits.callTimeoutMs').fill('7000');
      await page.getByTestId('mcp-add').click();
      await page.getByTestId('mcp-0-name').fill('home');
      await page.getByTestId('mcp-0-url').fill('http://127.0.0.1:9/api/mcp');
      await page.getByTestId('mcp-0-token').fill('tok-e2e-secret');
      await page.getByTestId('settings-save').click();
      await page.getByTestId('settings-saved').waitFor();
      t.true(overlay().includes('tok-e2e-secret'), 'the agent keeps the token');
      const cfg = await daemon.call('GET', '/api/config');
      const keys = (cfg.body as { keys: Array<{ key: string; value: unknown }> }).keys;
      t.deepEqual(keys.find((k) => k.key === 'voice.tools.mcp')?.value, [
        { name: 'home', url: 'http://127.0.0.1:9/api/mcp', token: '***' },
      ]);
      t.is(keys.find((k) => k.key === 'voice.tools.limits.callTimeoutMs')?.value, 7000);

      // Read back: the token field is empty, saying one is stored; a change of the URL keeps it.
      await page.reload();
      await page.getByTestId('mcp-0-token').waitFor();
      t.is(await page.getByTestId('mcp-0-token').inputValue(), '');
      t.regex((await page.getByTestId('mcp-0-token').getAttribute('placeholder')) ?? '', /stored/);
      await page.getByTestId('mcp-0-url').fill('http://127.0.0.1:9/mcp');
      await page.getByTestId('settings-save').click();
      await page.getByTestId('settings-saved').waitFor();
      t.regex(overlay(), /"url":\s*"http:\/\/127\.0\.0\.1:9\/mcp"[^}]*"token":\s*"tok-e2e-secret"/);
      const history = await daemon.call('GET', '/api/config/history?limit=10');
      t.false(JSON.stringify(history.body).includes('tok-e2e-secret'), 'the change log masks it');
      t.false((await page.content()).includes('tok-e2e-secret'), 'the page never holds it');
      await screenshot(page, 'settings-tool-sources');
    },
  );
}
