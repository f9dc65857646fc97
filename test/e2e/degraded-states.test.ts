import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { createAddonLoader, engineAvailability, unavailableMessage } from '../../engine/index.js';
import { mediaFixturesDir, modelFixturesDir, socFixturesDir } from '../helpers/paths.js';
import {
  buildDashboard,
  type DashboardAgent,
  launchChromium,
  login,
  screenshot,
  startDashboardAgent,
} from './harness.js';

// The states a new user meets before anything serves, in real Chromium: a slot configured while the engine is
// missing, a slot whose model fails to load, and no slot at all. Each test asserts what the pages SAY: the
// state, the reason with its fix, and that nothing claims a model serves when none does.

const test = anyTest as TestFn<{ browser: { context: BrowserContext; close(): Promise<void> } }>;
// A board without thermal zones, so the Telemetry page has to say so instead of waiting.
const devhost = join(socFixturesDir, 'x86_64-devhost-zen5');

test.before(async (t) => {
  buildDashboard();
  t.context.browser = await launchChromium(join(mediaFixturesDir, 'speech-hello-16k.wav'));
});
test.after.always(async (t) => {
  await t.context.browser?.close();
});

async function openPage(
  t: { context: { browser: { context: BrowserContext } }; teardown(f: () => unknown): void },
  agent: DashboardAgent,
): Promise<Page> {
  const page = await t.context.browser.context.newPage();
  t.teardown(() => page.close());
  await login(page, agent.url, agent.token);
  return page;
}

/** The text as rendered (what a person reads: block elements separated), whitespace collapsed. */
async function shown(locator: Locator): Promise<string> {
  // biome-ignore lint/performance/useDomNodeTextContent: the rendered text with its line breaks is the point
  return (await locator.evaluate((el) => (el as HTMLElement).innerText)).replace(/\s+/g, ' ').trim();
}

async function bodyText(page: Page): Promise<string> {
  return shown(page.locator('main'));
}

/** What no page may ever show: planner keys, unrendered objects. */
function assertNoInternals(t: { false(v: boolean, m?: string): void }, text: string, where: string): void {
  t.false(text.includes('[object Object]'), `${where} shows [object Object]`);
  t.false(/\|cpu t\d|p:low m:low|cpus:any/.test(text), `${where} shows a planner key`);
}

async function gotoModels(page: Page, url: string): Promise<void> {
  await page.goto(`${url}/#/models`);
  await page.waitForSelector(
    '[data-page="models"] [data-testid="slots"], [data-page="models"] [data-testid="no-slots"]',
  );
}

test.serial(
  'slot configured, engine missing: every page says it cannot serve, why, and how to fix it',
  async (t) => {
    const missing = createAddonLoader([join(modelFixturesDir, 'no-such-addon', 'mnn_edge_engine.node')]);
    const agent = await startDashboardAgent({
      root: devhost,
      availability: () => missing.availability(),
      fixtures: ['tiny-llm'],
      slots: { 'voice.llm': { model: 'tiny-llm' } },
      workloads: { voice: {}, vision: {} },
    });
    t.teardown(() => agent.stop());
    const page = await openPage(t, agent);

    // Overview: unhealthy, with the slot named, and the banner's fix.
    const overview = await bodyText(page);
    t.regex(overview, /Health unhealthy/);
    t.regex(
      await shown(page.getByTestId('unhealthy')),
      /slot voice\.llm cannot serve: MNN engine not available/,
    );
    const banner = await shown(page.getByTestId('engine-unavailable'));
    t.regex(banner, /The engine addon is not built/);
    t.regex(banner, /To fix: Set MNN_ROOT to an MNN install prefix .* and run npm run build:engine\./);
    await screenshot(page, 'degraded-engine-missing-overview');

    // Models: failed, never "serving", with the reason and the planned model in words.
    await gotoModels(page, agent.url);
    t.is(await shown(page.getByTestId('slot-phase-voice.llm')), 'failed');
    const row = page.locator('[data-testid="slots"] tbody tr', { hasText: 'voice.llm' });
    t.regex(
      await shown(row.getByTestId('slot-summary')),
      /^Planned tiny-llm@1\.0\.0 \(\S+\) on CPU, \d+ threads?, but it cannot run\.$/,
    );
    t.regex(
      await shown(row.getByTestId('slot-reason')),
      /^MNN engine not available: .*npm run build:engine\.$/,
    );
    const models = await bodyText(page);
    t.false(/Serving|served by/.test(models), 'nothing may claim to serve');
    assertNoInternals(t, models, 'Models');
    // The installed model's precision is written out, not an object.
    t.regex(models, /tiny-llm 1\.0\.0 llm .* \((weights \w+, activations \w+|W\d+A\d+)[^)]*; cpu\)/);
    // The pin dropdown offers the CPU; what this board cannot use is greyed with its reason.
    const options = await row
      .getByLabel('Backend for voice.llm')
      .locator('option')
      .evaluateAll((els) =>
        els.map((e) => ({ text: e.textContent ?? '', disabled: (e as HTMLOptionElement).disabled })),
      );
    t.deepEqual(options[0], { text: 'cpu', disabled: false });
    t.true(
      options.filter((o) => o.disabled).every((o) => /: not usable \(.+\)$/.test(o.text)),
      JSON.stringify(options),
    );
    await screenshot(page, 'degraded-engine-missing-models');

    // The OpenAI API lists no model that cannot answer.
    const listed = await page.evaluate(
      async () => (await (await fetch('/v1/models')).json()) as { data: unknown[] },
    );
    t.deepEqual(listed.data, []);

    // Telemetry: the two charts that cannot fill say why.
    await page.goto(`${agent.url}/#/telemetry`);
    await page.waitForSelector('[data-testid="live-state"]');
    const telemetry = await bodyText(page);
    t.regex(telemetry, /Not available on this board: it has no thermal zones/);
    t.regex(telemetry, /No model serving: the MNN engine is not available here/);
    await screenshot(page, 'degraded-engine-missing-telemetry');

    // OTA: the command it names exists.
    await page.goto(`${agent.url}/#/ota`);
    await page.waitForSelector('[data-testid="ota-empty"]');
    t.regex(await shown(page.getByTestId('ota-empty')), /mnn-edge ota publish --targets/);
  },
);

test.serial('no slot configured: the Models page says so and how to configure one', async (t) => {
  const agent = await startDashboardAgent({ root: devhost });
  t.teardown(() => agent.stop());
  const page = await openPage(t, agent);
  await gotoModels(page, agent.url);
  const notice = await shown(page.getByTestId('no-slots'));
  t.regex(notice, /^No slots configured/);
  t.regex(notice, /"slots": \{ "voice\.llm": \{ "model": "<model id>" \} \}/);
  t.regex(notice, /systemctl reload mnn-edge/);
  await screenshot(page, 'degraded-no-slots');
});

const engine = engineAvailability();
if (!engine.available)
  console.log(`degraded-states: the corrupt-model case skipped, ${unavailableMessage(engine.reason)}`);
(engine.available ? test.serial : test.skip)(
  'engine present, model files damaged: the slot is failed with the load error, the overview unhealthy',
  async (t) => {
    // A copy of tiny-llm whose tokenizer was overwritten (a bad copy, a half-written disk): the package imports
    // (its manifest is derived from the files as they are) but MNN refuses to load it.
    const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-corrupt-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const broken = join(dir, 'broken-llm');
    cpSync(join(modelFixturesDir, 'tiny-llm'), broken, { recursive: true });
    writeFileSync(join(broken, 'tokenizer.txt'), 'not a tokenizer\n');
    const agent = await startDashboardAgent({
      root: devhost,
      fixtures: [{ path: broken, id: 'broken-llm' }],
      slots: { 'voice.llm': { model: 'broken-llm' } },
      workloads: { voice: {}, vision: {} },
    });
    t.teardown(() => agent.stop());
    const page = await openPage(t, agent);
    await gotoModels(page, agent.url);
    // The runtime retries a failed load with backoff; between retries (the page refreshes every 4 s) it is failed.
    await page.waitForFunction(
      () => document.querySelector('[data-testid="slot-phase-voice.llm"]')?.textContent === 'failed',
      null,
      { polling: 250, timeout: 60_000 },
    );
    await screenshot(page, 'degraded-corrupt-model');
    t.is(await shown(page.getByTestId('slot-phase-voice.llm')), 'failed');
    const row = page.locator('[data-testid="slots"] tbody tr', { hasText: 'voice.llm' });
    t.regex(
      await shown(row.getByTestId('slot-summary')),
      /^Planned broken-llm@1\.0\.0 \(\S+\) on CPU, \d+ threads?, but it failed to load( \(\d+ attempts\))?\.$/,
    );
    t.true((await shown(row.getByTestId('slot-reason'))).length > 10);
    const models = await bodyText(page);
    t.false(/Serving|served by/.test(models));
    assertNoInternals(t, models, 'Models');
    await page.goto(`${agent.url}/#/overview`);
    await page.waitForSelector('[data-testid="board-name"]');
    // As on the Models page: between retries the slot is failed; while a retry runs it reads "still loading".
    await page.waitForFunction(
      () =>
        /slot voice\.llm cannot serve/.test(
          document.querySelector('[data-testid="unhealthy"]')?.textContent ?? '',
        ),
      null,
      { polling: 250, timeout: 60_000 },
    );
    t.regex(await shown(page.getByTestId('unhealthy')), /slot voice\.llm cannot serve/);
    t.is(await page.getByTestId('engine-unavailable').count(), 0);
    const listed = await page.evaluate(
      async () => (await (await fetch('/v1/models')).json()) as { data: unknown[] },
    );
    t.deepEqual(listed.data, []);
  },
);
