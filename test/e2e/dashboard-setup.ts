// The dashboard's e2e files share this: one agent on the ROCK 5B fixture root (with MNN installed, the fixture
// models imported and every slot served by its own engine host) and one Chromium whose fake microphone plays a
// short utterance, for the whole file (serial tests); optionally logged in before the first test. Each file
// walks its own pages, with a screenshot of each in test-artifacts/dashboard/.
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import type { BrowserContext, Page } from 'playwright-core';
import { engineAvailability } from '../../engine/index.js';
import { mediaFixturesDir, socFixturesDir } from '../helpers/paths.js';
import {
  buildDashboard,
  type DashboardAgent,
  launchChromium,
  login,
  startDashboardAgent,
} from './harness.js';

export const rock5b = join(socFixturesDir, 'rockchip-rk3588-rock5b');
const speechWav = join(mediaFixturesDir, 'speech-hello-16k.wav');

export interface DashboardContext {
  agent: DashboardAgent;
  browser: { context: BrowserContext; close(): Promise<void> };
  page: Page;
}

/** The file's test function with the agent, browser and page in its context, stopped after the last test. */
export function dashboardTest(options: { loggedIn: boolean }): TestFn<DashboardContext> {
  const test = anyTest as TestFn<DashboardContext>;
  test.before(async (t) => {
    buildDashboard();
    t.context.agent = await startDashboardAgent({
      root: rock5b,
      ...(engineAvailability().available
        ? { fixtures: ['silero-vad', 'tiny-omni-audio', 'tiny-llm', 'tiny-vlm'] as const }
        : {}),
      slots: {
        'voice.vad': { model: 'silero-vad' },
        'voice.asr': { model: 'tiny-omni-audio' },
        'voice.llm': { model: 'tiny-llm' },
        'vision.vlm': { model: 'tiny-vlm' },
      },
      workloads: { voice: { maxNewTokens: 16 }, vision: { maxNewTokens: 6 } },
    });
    t.context.browser = await launchChromium(speechWav);
    t.context.page = await t.context.browser.context.newPage();
    if (options.loggedIn) await login(t.context.page, t.context.agent.url, t.context.agent.token);
  });
  test.after.always(async (t) => {
    await t.context.browser?.close();
    await t.context.agent?.stop();
  });
  return test;
}
