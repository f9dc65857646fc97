// The Overview's MNN backend rows in real Chromium against an agent on the ROCK 5B fixture root: each a one-line
// verdict, with the evidence chain `detect` prints as separate steps on demand. No engine or model is needed: the
// chain is detection's. Its own file (one agent and browser) beside dashboard.test.ts, which walks every page.
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import type { BrowserContext, Page } from 'playwright-core';
import type { OverviewView } from '../../agent/dashboard-api/overview.js';
import { mediaFixturesDir, socFixturesDir } from '../helpers/paths.js';
import {
  buildDashboard,
  type DashboardAgent,
  launchChromium,
  login,
  screenshot,
  startDashboardAgent,
} from './harness.js';

const test = anyTest as TestFn<{
  agent: DashboardAgent;
  browser: { context: BrowserContext; close(): Promise<void> };
  page: Page;
}>;

test.before(async (t) => {
  buildDashboard();
  t.context.agent = await startDashboardAgent({ root: join(socFixturesDir, 'rockchip-rk3588-rock5b') });
  t.context.browser = await launchChromium(join(mediaFixturesDir, 'speech-hello-16k.wav'));
  t.context.page = await t.context.browser.context.newPage();
});

test.after.always(async (t) => {
  await t.context.browser?.close();
  await t.context.agent?.stop();
});

test.serial(
  'each backend row reads as a one-line verdict, with its evidence chain as separate steps on demand',
  async (t) => {
    const { page, agent } = t.context;
    await login(page, agent.url, agent.token);
    const view = (await (
      await fetch(`${agent.url}/api/overview`, { headers: { Authorization: `Bearer ${agent.token}` } })
    ).json()) as OverviewView;
    const vulkan = view.backends.find((b) => b.backend === 'vulkan')!;
    // The chain `detect` prints: device node, ICD, loader, device kind, compiled in, init probe.
    t.deepEqual(
      vulkan.steps.map((s) => s.step),
      ['device-node', 'icd', 'loader', 'device-kind', 'compiled-in', 'init-probe'],
    );
    const row = page.locator('.backend-why[data-backend="vulkan"]');
    t.is(await row.locator('.verdict').textContent(), vulkan.verdict);
    t.is(await row.locator('ol.steps li').first().isVisible(), false, 'the steps are collapsed at first');
    await row.locator('details summary').click();
    const items = row.locator('ol.steps li');
    t.is(await items.count(), vulkan.steps.length);
    for (const [i, step] of vulkan.steps.entries()) {
      t.is(await items.nth(i).getAttribute('data-status'), step.status);
      t.true(((await items.nth(i).textContent()) ?? '').endsWith(step.detail), step.detail);
    }
    // No row joins its reasons into one run-on sentence: the verdict is the first, every reason is a step.
    for (const b of view.backends) {
      t.is(
        await page.locator(`.backend-why[data-backend="${b.backend}"] .verdict`).textContent(),
        b.reasons[0] ?? '',
      );
      if (b.reasons.length > 1) t.true(b.steps.length >= b.reasons.length, b.backend);
    }
    await screenshot(page, 'overview-backend-steps');
  },
);
