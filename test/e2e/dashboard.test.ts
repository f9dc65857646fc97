import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import type { BrowserContext, Page } from 'playwright-core';
import { engineAvailability } from '../../engine/src/index.js';
import { mediaFixturesDir, socFixturesDir } from '../helpers/paths.js';
import {
  buildDashboard,
  type DashboardAgent,
  launchChromium,
  login,
  screenshot,
  startDashboardAgent,
} from './harness.js';

// The dashboard in real Chromium against an agent started on the ROCK 5B fixture root. One agent and one
// browser for the file (serial tests), a screenshot of every page in test-artifacts/dashboard/.

const test = anyTest as TestFn<{
  agent: DashboardAgent;
  browser: { context: BrowserContext; close(): Promise<void> };
  page: Page;
}>;
const rock5b = join(socFixturesDir, 'rockchip-rk3588-rock5b');
const speechWav = join(mediaFixturesDir, 'speech-hello-16k.wav');

test.before(async (t) => {
  buildDashboard();
  t.context.agent = await startDashboardAgent({
    root: rock5b,
    slots: { 'voice.vad': { builtin: 'energy-vad' }, 'voice.llm': { model: 'tiny-llm' } },
  });
  t.context.browser = await launchChromium(speechWav);
  t.context.page = await t.context.browser.context.newPage();
});

test.after.always(async (t) => {
  await t.context.browser?.close();
  await t.context.agent?.stop();
});

test.serial('without a cookie the API answers 401 and the page shows the login form', async (t) => {
  const { agent, page } = t.context;
  const res = await fetch(`${agent.url}/api/overview`);
  t.is(res.status, 401);
  await page.goto(`${agent.url}/`);
  await page.waitForSelector('[data-testid="token"]');
  t.regex(page.url(), /#\/login$/);
  const status = await page.evaluate(async () => (await fetch('/api/overview')).status);
  t.is(status, 401);
  await screenshot(page, 'login');
});

test.serial(
  'a wrong token is refused with the agent’s message; the right one opens the overview',
  async (t) => {
    const { agent, page } = t.context;
    await page.goto(`${agent.url}/#/login`);
    await page.getByTestId('token').fill('not-the-token');
    await page.getByTestId('login').click();
    await page.waitForFunction(
      () => (document.querySelector('[data-testid="login-error"]')?.textContent ?? '').length > 0,
    );
    t.is(
      await page.getByTestId('login-error').textContent(),
      'The pairing token is not valid (see `mnn-edge token` on the device)',
    );
    await login(page, agent.url, agent.token);
    const cookies = await t.context.browser.context.cookies(agent.url);
    const session = cookies.find((c) => c.name === 'mnn_edge_session');
    t.truthy(session);
    t.true(session?.httpOnly);
    t.is(session?.sameSite, 'Strict');
  },
);

test.serial('the overview shows the fixture board, its SoC and the RK3588 NPU with evidence', async (t) => {
  const { page } = t.context;
  t.regex((await page.getByTestId('board-name').textContent()) ?? '', /ROCK 5B/i);
  t.regex((await page.getByTestId('soc-name').textContent()) ?? '', /rk3588/i);
  t.regex((await page.getByTestId('accelerators').textContent()) ?? '', /Rockchip NPU/);
  const engine = engineAvailability();
  t.is(await page.getByTestId('engine-unavailable').count(), engine.available ? 0 : 1);
  await screenshot(page, 'overview');
});

test.serial(
  'models & placement: the slots with status and reasons, pin controls, and how to pull the first models',
  async (t) => {
    const { agent, page } = t.context;
    await page.goto(`${agent.url}/#/models`);
    await page.waitForSelector('[data-testid="no-models"]');
    t.regex((await page.getByTestId('no-models').textContent()) ?? '', /mnn-edge models pull/);
    // The real runtime planned the configured slots against an empty store: the VAD is built in, the LLM waits.
    const rows = await page.locator('[data-testid="slots"] tbody tr').allTextContents();
    t.true(
      rows.some((r) => r.startsWith('voice.vad') && /builtin/.test(r)),
      rows.join('\n'),
    );
    t.true(
      rows.some((r) => r.startsWith('voice.llm') && /unloaded/.test(r)),
      rows.join('\n'),
    );
    await screenshot(page, 'models');
  },
);

test.serial('telemetry: last hour from history, then live samples over the WebSocket', async (t) => {
  const { agent, page } = t.context;
  // Let the samplers record a few points first, so history is not empty.
  await new Promise((r) => setTimeout(r, 2500));
  await page.goto(`${agent.url}/#/telemetry`);
  await page.waitForFunction(
    () => document.querySelector('[data-testid="live-state"]')?.textContent === 'Live',
  );
  await page.waitForFunction(() =>
    [...document.querySelectorAll('.legend span')].some((s) => /core0/.test(s.textContent ?? '')),
  );
  await new Promise((r) => setTimeout(r, 2200));
  const legends = await page.locator('.legend span').allTextContents();
  t.true(legends.includes('core0'));
  t.true(legends.includes('used'));
  await screenshot(page, 'telemetry');
});

test.serial(
  'voice: a fake-microphone session gives transcript, reply and playback, or says why it cannot run',
  async (t) => {
    const { agent, page } = t.context;
    await page.goto(`${agent.url}/#/voice`);
    await page.waitForSelector('[data-page="voice"] h1');
    const engine = engineAvailability();
    const workloads = (await page.evaluate(async () => (await fetch('/api/workloads')).json())) as {
      voice: { available: boolean; reason?: string };
    };
    if (!engine.available) {
      await page.waitForSelector('[data-testid="engine-unavailable"]');
      t.regex(
        (await page.getByTestId('engine-unavailable').textContent()) ?? '',
        /^Engine not available.*Voice needs the MNN engine/s,
      );
    } else if (!workloads.voice.available) {
      await page.waitForSelector('[data-testid="voice-unavailable"]');
      t.is(
        await page.getByTestId('voice-unavailable').locator('p').textContent(),
        (workloads.voice.reason ?? '').replaceAll('`', ''),
      );
    } else {
      await page.getByTestId('voice-mode').selectOption('vad');
      await page.getByTestId('voice-start').click();
      await page.waitForFunction(
        () => (document.querySelector('[data-testid="reply"]')?.textContent ?? '').length > 0,
        null,
        { timeout: 90_000 },
      );
      await page.waitForFunction(
        () =>
          /Played [1-9]|Played 0\.[1-9]/.test(
            document.querySelector('[data-testid="playback"]')?.textContent ?? '',
          ),
        null,
        { timeout: 90_000 },
      );
      t.true((await page.locator('.turn .you').first().textContent())!.length > 0);
      t.true((await page.locator('[data-testid="latencies"] tbody tr').count()) >= 1);
    }
    await screenshot(page, 'voice');
  },
);

test.serial('vision: the fake camera plays in the preview and a snapshot is taken from it', async (t) => {
  const { agent, page } = t.context;
  await page.goto(`${agent.url}/#/vision`);
  await page.getByTestId('camera-start').click();
  await page.waitForFunction(() => {
    const v = document.querySelector<HTMLVideoElement>('[data-testid="camera-preview"]');
    return v !== null && v.videoWidth > 0 && !v.paused;
  });
  await page.getByTestId('snapshot-take').click();
  await page.waitForFunction(() =>
    /^Snapshot \d+×\d+/.test(document.querySelector('[data-testid="camera-state"]')?.textContent ?? ''),
  );
  const size = await page.evaluate(() => {
    const c = document.querySelector<HTMLCanvasElement>('[data-testid="snapshot"]')!;
    return { w: c.width, h: c.height };
  });
  t.true(size.w > 0 && size.h > 0);
  await screenshot(page, 'vision');
});

test.serial('OTA and logs pages show their states', async (t) => {
  const { agent, page } = t.context;
  await page.goto(`${agent.url}/#/ota`);
  await page.waitForSelector('[data-testid="ota-empty"]');
  await screenshot(page, 'ota');
  await page.goto(`${agent.url}/#/logs`);
  await page.waitForFunction(
    () => (document.querySelector('[data-testid="log-lines"]')?.children.length ?? 0) > 0,
  );
  t.regex((await page.getByTestId('log-lines').textContent()) ?? '', /login/);
  await screenshot(page, 'logs');
});

test.serial('logout revokes the session: the API is 401 again and the page returns to login', async (t) => {
  const { agent, page } = t.context;
  await page.goto(`${agent.url}/#/overview`);
  await page.waitForSelector('[data-testid="board-name"]');
  await page.getByTestId('logout').click();
  await page.waitForSelector('[data-testid="token"]');
  const status = await page.evaluate(async () => (await fetch('/api/overview')).status);
  t.is(status, 401);
  const cookies = await t.context.browser.context.cookies(agent.url);
  t.falsy(cookies.find((c) => c.name === 'mnn_edge_session'));
});
