import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import type { BrowserContext, Page } from 'playwright-core';
import { engineAvailability } from '../../engine/index.js';
import { expectedOutput } from '../engine/_engine.js';
import {
  repoFromDir,
  type Standin,
  startHuggingFaceStandin,
  startModelScopeStandin,
} from '../helpers/hub-standins.js';
import { mediaFixturesDir, modelFixturesDir, socFixturesDir } from '../helpers/paths.js';
import {
  buildDashboard,
  type DashboardAgent,
  launchChromium,
  login,
  screenshot,
  startDashboardAgent,
} from './harness.js';

// "Get models" in real Chromium against the loopback hub stand-ins (the only hubs these machines reach): the
// search lists the fixture exports, the recommended list says why, a pull shows its progress and can be
// cancelled half-way on a slowed stand-in without leaving anything installed, and the retry resumes, installs
// (marked unsigned) and the voice.llm slot that named the model is placed on it and answers.

const test = anyTest as TestFn<{
  agent: DashboardAgent;
  hf: Standin;
  ms: Standin;
  browser: { context: BrowserContext; close(): Promise<void> };
  page: Page;
}>;
const rock5b = join(socFixturesDir, 'rockchip-rk3588-rock5b');
const engine = engineAvailability().available;

test.before(async (t) => {
  buildDashboard();
  t.context.hf = await startHuggingFaceStandin([
    repoFromDir('taobao-mnn', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm'), { downloads: 20 }),
    repoFromDir('taobao-mnn', 'tiny-vlm-MNN', join(modelFixturesDir, 'tiny-vlm'), { downloads: 10 }),
  ]);
  t.context.ms = await startModelScopeStandin([
    repoFromDir('MNN', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm')),
  ]);
  t.context.agent = await startDashboardAgent({
    root: rock5b,
    // The slot names the id a pull of taobao-mnn/tiny-llm-MNN installs as: empty until the pull lands.
    slots: { 'voice.llm': { model: 'tiny-llm-mnn' } },
    hubs: { hf: t.context.hf.endpoint, ms: t.context.ms.endpoint },
  });
  t.context.browser = await launchChromium(join(mediaFixturesDir, 'speech-hello-16k.wav'));
  t.context.page = await t.context.browser.context.newPage();
  await login(t.context.page, t.context.agent.url, t.context.agent.token);
});

test.after.always(async (t) => {
  await t.context.browser?.close();
  await t.context.agent?.stop();
  await t.context.hf?.close();
  await t.context.ms?.close();
});

test.serial('the recommended list ranks the hub’s exports for this board, with the reasons', async (t) => {
  const { agent, page } = t.context;
  await page.goto(`${agent.url}/#/models`);
  await page.waitForSelector('[data-testid="get-models"]');
  t.regex((await page.getByTestId('hub-trust').textContent()) ?? '', /unsigned and trusted on first use/);
  const rec = page.locator('[data-testid="rec"][data-source="hf://taobao-mnn/tiny-llm-MNN"]');
  await rec.first().waitFor();
  const llm = page.locator('[data-testid="rec-role"][data-role="voice.llm"] [data-testid="rec"]').first();
  t.regex((await llm.textContent()) ?? '', /best fit.*hf:\/\/taobao-mnn\/tiny-llm-MNN/);
  const reasons = await llm.locator('[data-testid="rec-reason"]').allTextContents();
  t.regex(reasons[0] ?? '', /^fits: [\d.]+ MiB with a 2048-token KV cache, budget \d+ MiB/);
  t.true(
    reasons.some((r) => /^runs on cpu/.test(r)),
    reasons.join('\n'),
  );
  await page
    .locator('[data-testid="rec-role"][data-role="vision.vlm"] [data-testid="rec"]')
    .first()
    .waitFor();

  // The source switch: ModelScope's MNN organisation.
  await page.getByTestId('hub-source').selectOption('ms');
  await page.locator('[data-testid="rec"][data-source="ms://MNN/tiny-llm-MNN"]').first().waitFor();
  await page.getByTestId('hub-source').selectOption('hf');
  await rec.first().waitFor();
});

test.serial('search lists the tiny exports with size and task', async (t) => {
  const { page } = t.context;
  await page.getByTestId('hub-words').fill('tiny');
  await page.getByTestId('hub-search').click();
  await page.waitForSelector('[data-testid="hub-results"] table');
  const rows = await page.locator('[data-testid="hub-results"] tbody tr').allTextContents();
  t.is(rows.length, 2, rows.join('\n'));
  t.regex(
    rows.find((r) => r.includes('tiny-llm-MNN')) ?? '',
    /hf:\/\/taobao-mnn\/tiny-llm-MNN\s*[\d.]+ KiB\s*llm \(text\)/,
  );
  t.regex(rows.find((r) => r.includes('tiny-vlm-MNN')) ?? '', /vlm \(vision\)/);
  await page.getByTestId('hub-words').fill('nothing-like-this');
  await page.getByTestId('hub-search').click();
  await page.waitForSelector('[data-testid="hub-empty"]');
  t.regex((await page.getByTestId('hub-empty').textContent()) ?? '', /No models by taobao-mnn match/);
  await page.getByTestId('hub-words').fill('tiny');
  await page.getByTestId('hub-search').click();
  await page.waitForSelector('[data-testid="hub-results"] table');
  await screenshot(page, 'get-models-search');
});

test.serial('a pull cancelled half-way on a slow link leaves nothing installed', async (t) => {
  const { hf, page } = t.context;
  hf.bytesPerSecond = 48 * 1024;
  await page
    .locator('[data-testid="hub-results"] [data-testid="pull"][data-source="hf://taobao-mnn/tiny-llm-MNN"]')
    .click();
  const row = page.locator('[data-testid="pull-row"]').first();
  // Bytes, rate and ETA while it runs.
  await page.waitForFunction(() =>
    /KiB \/ [\d.]+ KiB · [\d.]+ KiB\/s · ETA \d+ s/.test(
      document.querySelector('[data-testid="pull-row"] [data-testid="pull-progress"]')?.textContent ?? '',
    ),
  );
  const bar = row.getByTestId('pull-bar');
  t.true(Number(await bar.getAttribute('value')) > 0);
  await screenshot(page, 'get-models-progress');
  // A second pull of the same repository is refused while this one runs.
  await page
    .locator('[data-testid="hub-results"] [data-testid="pull"][data-source="hf://taobao-mnn/tiny-llm-MNN"]')
    .click();
  await page.waitForFunction(() =>
    /is already being pulled/.test(document.querySelector('[data-testid="hub-error"]')?.textContent ?? ''),
  );
  await row.getByTestId('pull-cancel').click();
  await page.waitForSelector('[data-testid="pull-row"][data-state="cancelled"]');
  t.regex(
    (await page
      .locator('[data-testid="pull-row"][data-state="cancelled"] [data-testid="pull-error"]')
      .textContent()) ?? '',
    /Cancelled; pulling the same model again resumes/,
  );
  const models = (await page.evaluate(async () => (await fetch('/api/models')).json())) as {
    installed: Array<{ id: string }>;
  };
  t.deepEqual(models.installed, [], 'nothing half-installed');
});

test.serial(
  'the retry resumes, installs unsigned, and the slot naming it is placed and answers',
  async (t) => {
    const { agent, hf, page } = t.context;
    hf.bytesPerSecond = 256 * 1024;
    const servedBefore = hf.log.bytes;
    await page
      .locator('[data-testid="hub-results"] [data-testid="pull"][data-source="hf://taobao-mnn/tiny-llm-MNN"]')
      .click();
    await page.waitForSelector('[data-testid="pull-row"][data-state="installed"]', { timeout: 60_000 });
    const outcome =
      (await page
        .locator('[data-testid="pull-row"][data-state="installed"] [data-testid="pull-outcome"]')
        .textContent()) ?? '';
    t.regex(
      outcome,
      /^Installed tiny-llm-mnn@1\.0\.0 from taobao-mnn\/tiny-llm-MNN@[0-9a-f]{12} .* unsigned \(trust on first use\)$/,
    );
    const pulls = (await page.evaluate(async () => (await fetch('/api/hub/pulls')).json())) as {
      pulls: Array<{ state: string; fetchedBytes?: number; totalBytes: number }>;
    };
    const done = pulls.pulls.find((p) => p.state === 'installed')!;
    t.true(done.fetchedBytes! < done.totalBytes, 'the retry resumed what the cancelled pull had fetched');
    t.true(hf.log.bytes - servedBefore < done.totalBytes);
    // Listed as a hub pull, unsigned, in the installed table.
    await page.waitForSelector('[data-testid="installed-models"] [data-testid="model-source"]');
    t.regex(
      (await page.getByTestId('model-source').textContent()) ?? '',
      /^huggingface taobao-mnn\/tiny-llm-MNN@[0-9a-f]{12} unsigned \(trust on first use\)$/,
    );
    await screenshot(page, 'get-models-installed');
    if (!engine) {
      t.log('MNN is not installed: the placement and answer of the pulled model are not checked');
      return;
    }
    // The install replanned: voice.llm is served by the pulled model, and it answers with the recorded text.
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll('[data-testid="slots"] tbody tr')].some(
          (r) =>
            r.textContent?.startsWith('voice.llm') &&
            /serving/.test(r.textContent) &&
            /tiny-llm-mnn/.test(r.textContent),
        ),
      undefined,
      { timeout: 120_000 },
    );
    const answer = await agent
      .runtime()!
      .serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 32 });
    t.is(answer.text, expectedOutput('tiny-llm').text);
  },
);
