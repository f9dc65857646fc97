// The wake word on the Voice page, against the real daemon (`mnn-edge run` as its own process, the project's
// "hey computer" package in its store on slot voice.wake, Wyoming on) and real Chromium: detect runs sent over
// Wyoming are scored and the page's chart draws their scores, the threshold line and a mark for the detection;
// a threshold changed on the page goes through the configuration (a revision, applied at once: the line moves
// when the agent says so), a value out of range is refused with the schema's message, and after the agent
// restarts the page shows the saved threshold again. With voice.wake.clips on, the detection's audio is listed
// and can be marked a false trigger.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest from 'ava';
import type { Page } from 'playwright-core';
import { STORE_FILE } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { positiveClip, randomVoice, splitVoices } from '../../engine/tools/wake-keyword/corpus.js';
import {
  ensureWakeKeyword,
  keywordToolsMissing,
  QUICK_RECIPE,
} from '../../engine/tools/wake-keyword/make-keyword.js';
import { rng } from '../../engine/tools/wake-keyword/speech.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelStore } from '../../models/index.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { startAgentDaemon } from '../helpers/run-agent.js';
import { skipWithLine } from '../helpers/skip.js';
import { until } from '../helpers/until.js';
import { WyomingTestClient } from '../helpers/wyoming-client.js';
import { buildDashboard, launchChromium, login, screenshot } from './harness.js';

const KEYWORD = 'hey_computer';
const CONFIG = {
  slots: { 'voice.wake': { model: 'hey-computer' } },
  wyoming: { enabled: true, bind: '127.0.0.1', port: 0, mdns: false },
  voice: { wake: { clips: { enabled: true, maxCount: 5 } } },
};

interface Daemon {
  url: string;
  token: string;
  wyomingPort: number;
  call(method: string, path: string): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

const run = {} as {
  dir: string;
  dataDir: string;
  daemon: Daemon;
  browser: Awaited<ReturnType<typeof launchChromium>>;
  page: Page;
};
const test = anyTest.serial;

async function startDaemon(dataDir: string): Promise<Daemon> {
  const started = await startAgentDaemon<Record<string, unknown>>(dataDir, CONFIG);
  // Started means the settings module has, which starts last: the workloads have said their Wyoming port by then.
  const wyomingPort = /"msg":"workloads ready".*?"wyoming":(\d+)/.exec(started.output())?.[1];
  if (!wyomingPort) {
    await started.stop();
    throw new Error(`the daemon did not start:\n${started.output()}`);
  }
  const daemon: Daemon = {
    url: started.url,
    token: started.token,
    wyomingPort: Number(wyomingPort),
    call: async (method, path) => (await started.call(method, path)).body,
    stop: () => started.stop(),
  };
  // The keyword package loaded in its engine host: a page opened now can show its keywords.
  await until(
    async () => ((await daemon.call('GET', '/api/voice/wake'))['available'] as boolean) === true,
    'voice.wake serving',
    { timeoutMs: 180_000, stepMs: 200 },
  );
  return daemon;
}

function s16(samples: Float32Array): Buffer {
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++)
    out.writeInt16LE(Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767), i * 2);
  return out;
}

/** One Wyoming detect run of `audio`; resolves with the answer's type (detection / not-detected / error). */
async function detect(c: WyomingTestClient, audio: Float32Array): Promise<string> {
  const from = c.events.length;
  const pcm = s16(audio);
  c.send('detect', { names: [KEYWORD] });
  c.send('audio-start', { rate: 16000, width: 2, channels: 1 });
  for (let at = 0; at < pcm.length; at += 3200)
    c.send('audio-chunk', { rate: 16000, width: 2, channels: 1 }, pcm.subarray(at, at + 3200));
  c.send('audio-stop');
  let answer: string | undefined;
  await until(
    () => {
      answer = c.events
        .slice(from)
        .find((e) => ['detection', 'not-detected', 'error'].includes(e.type))?.type;
      return answer !== undefined || c.socket.destroyed;
    },
    'the detect answer',
    { timeoutMs: 120_000, stepMs: 20 },
  );
  return answer ?? 'closed';
}

async function chartData(page: Page, key: 'frames' | 'detections' | 'thresholds'): Promise<string> {
  return (await page.getByTestId('wake-chart').getAttribute(`data-${key}`)) ?? '';
}

const engineWhy = (() => {
  const a = engineAvailability();
  return a.available ? undefined : unavailableMessage(a.reason);
})();
const missing = engineWhy ?? (await keywordToolsMissing(QUICK_RECIPE));

if (missing) {
  skipWithLine(`SKIP wake word on the dashboard: ${missing}`, anyTest);
} else {
  anyTest.before(async (t) => {
    // First run on a machine: the quick keyword recipe takes minutes (synthesis, features, training).
    t.timeout(25 * 60_000);
    buildDashboard();
    const keyword = await ensureWakeKeyword({ quick: true });
    run.dir = mkdtempSync(join(tmpdir(), 'mnn-edge-e2e-wake-'));
    run.dataDir = join(run.dir, 'data');
    mkdirSync(run.dataDir);
    const db = openStore(join(run.dataDir, STORE_FILE), { migrations: allMigrations });
    const { store } = ModelStore.open({ dataDir: run.dataDir, db, log: createMemoryLogger() });
    await store.import(keyword, { id: 'hey-computer', version: '1.0.0' });
    store.close();
    db.close();
    run.daemon = await startDaemon(run.dataDir);
    run.browser = await launchChromium(join(mediaFixturesDir, 'speech-hello-16k.wav'));
    run.page = await run.browser.context.newPage();
    await login(run.page, run.daemon.url, run.daemon.token);
  });
  anyTest.after.always(async () => {
    await run.browser?.close();
    await run.daemon?.stop();
    if (run.dir) rmSync(run.dir, { recursive: true, force: true });
  });

  test('the chart draws the scores of Wyoming detect runs, the threshold line and the detection', async (t) => {
    t.timeout(10 * 60_000);
    const { daemon, page } = run;
    await page.goto(`${daemon.url}/#/voice`);
    await page.getByTestId('wake-live-state').getByText('Live.').waitFor({ timeout: 60_000 });
    const status = (await daemon.call('GET', '/api/voice/wake')) as {
      keywords: Array<{ threshold: number }>;
    };
    const threshold = status.keywords[0]!.threshold;
    t.is(await page.getByTestId(`wake-threshold-${KEYWORD}`).inputValue(), String(threshold));
    t.is(await chartData(page, 'thresholds'), `${KEYWORD}=${threshold}`);
    const c = await WyomingTestClient.connect(daemon.wyomingPort);
    t.teardown(() => c.socket.destroy());
    // Held-out voices: the quick model misses some, so clips go until one is detected.
    const r = rng(5);
    const split = splitVoices(2028);
    let answer = '';
    for (let i = 0; i < 8 && answer !== 'detection'; i++) {
      const clip = await positiveClip('hey computer', randomVoice(r, split.heldOut), r);
      answer = await detect(c, clip.audio);
      t.not(answer, 'error');
    }
    t.is(answer, 'detection', 'one of eight held-out clips detected');
    await page.waitForFunction(
      () =>
        Number(document.querySelector('[data-testid="wake-chart"]')?.getAttribute('data-detections')) >= 1,
      undefined,
      { timeout: 60_000 },
    );
    t.true(Number(await chartData(page, 'frames')) > 12, 'the clips’ frames are drawn');
    await page.getByTestId('wake-live-state').getByText('scoring audio from wyoming').waitFor();
    const row = page.getByTestId('wake-detections').locator('tbody tr').first();
    t.regex((await row.textContent()) ?? '', new RegExp(`${KEYWORD}[01]\\.\\d\\dwyoming$`));

    // voice.wake.clips is on: the detection's audio is listed; marking it a false trigger gives a tuning hint.
    const clip = page.locator('tr[data-testid^="wake-clip-"]').first();
    await clip.waitFor({ timeout: 60_000 });
    const id = ((await clip.getAttribute('data-testid')) ?? '').replace('wake-clip-', '');
    t.regex(id, new RegExp(`^\\d+-\\d+-${KEYWORD}$`));
    t.true(existsSync(join(run.dataDir, 'wake-clips', `${id}.wav`)));
    await page.getByTestId(`wake-clip-false-${id}`).click();
    await page.locator(`tr[data-testid="wake-clip-${id}"][data-label="false-trigger"]`).waitFor();
    t.regex(
      (await page.getByTestId('wake-tuning').textContent()) ?? '',
      // A clear detection scores ~0.99: over the highest threshold the configuration takes, and the hint says so.
      new RegExp(
        `^${KEYWORD}: false triggers scored up to [01]\\.\\d\\d(, so a threshold above that|, above any threshold allowed)`,
      ),
    );
    t.regex((await page.getByTestId('wake-clips-summary').textContent()) ?? '', /1 marked as false triggers/);
    await screenshot(page, 'voice-wake-chart');
  });

  test('a threshold changed on the page is saved in the configuration, applied at once and kept across a restart', async (t) => {
    t.timeout(10 * 60_000);
    const { page } = run;
    const input = page.getByTestId(`wake-threshold-${KEYWORD}`);
    await input.fill('1.5');
    await page.getByTestId(`wake-threshold-save-${KEYWORD}`).click();
    const error = page.getByTestId('wake-threshold-error');
    await error.waitFor();
    t.regex(
      (await error.textContent()) ?? '',
      /voice\.wake\.keywords\.hey_computer\.threshold: expected a number <= 0\.99, got 1\.5/,
    );
    t.is((await run.daemon.call('GET', '/api/config'))['revision'], 0, 'nothing saved');

    await input.fill('0.35');
    await page.getByTestId(`wake-threshold-save-${KEYWORD}`).click();
    await page
      .getByTestId('wake-threshold-result')
      .getByText(`Saved as revision 1: ${KEYWORD} threshold 0.35, applied now.`)
      .waitFor();
    // The line moves when the agent reports the rule in force (its `keywords` event), not on the click.
    await page.waitForFunction(
      (k) => document.querySelector('[data-testid="wake-chart"]')?.getAttribute('data-thresholds') === k,
      `${KEYWORD}=0.35`,
    );
    const keys = (await run.daemon.call('GET', '/api/config'))['keys'] as Array<Record<string, unknown>>;
    t.like(
      keys.find((k) => k['key'] === `voice.wake.keywords.${KEYWORD}.threshold`),
      { value: 0.35, source: 'overlay', access: 'live' },
    );
    await screenshot(page, 'voice-wake-threshold');

    await run.daemon.stop();
    run.daemon = await startDaemon(run.dataDir);
    await login(page, run.daemon.url, run.daemon.token);
    await page.goto(`${run.daemon.url}/#/voice`);
    await page.getByTestId('wake-live-state').getByText('Live.').waitFor({ timeout: 60_000 });
    t.is(await input.inputValue(), '0.35');
    t.is(await chartData(page, 'thresholds'), `${KEYWORD}=0.35`);
    const wake = (await run.daemon.call('GET', '/api/voice/wake')) as {
      keywords: Array<{ threshold: number }>;
    };
    t.is(wake.keywords[0]!.threshold, 0.35);
  });
}
