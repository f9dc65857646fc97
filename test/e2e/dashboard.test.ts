import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import type { BrowserContext, Page } from 'playwright-core';
import { createAddonLoader, engineAvailability } from '../../engine/index.js';
import { mediaFixturesDir, modelFixturesDir, socFixturesDir } from '../helpers/paths.js';
import { selfSignedCert } from '../helpers/tls.js';
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
    // With MNN installed the fixture models are imported and every slot is served by its own engine host.
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

test.serial('no string in any API answer is "[object Object]" or another unrendered value', async (t) => {
  const { page } = t.context;
  const paths = [
    '/api/session',
    '/api/overview',
    '/api/capabilities',
    '/api/placement',
    '/api/models',
    '/api/workloads',
    '/api/limits',
    '/api/ota/jobs',
    '/api/logs',
    '/api/telemetry/metrics',
    '/api/runtime',
    '/v1/models',
  ];
  const bad: string[] = [];
  const walk = (path: string, where: string, v: unknown): void => {
    if (typeof v === 'string') {
      if (/\[object \w+\]/.test(v)) bad.push(`${path} ${where}: ${v.slice(0, 120)}`);
    } else if (Array.isArray(v)) {
      for (const [i, x] of v.entries()) walk(path, `${where}[${i}]`, x);
    } else if (v !== null && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) walk(path, where ? `${where}.${k}` : k, x);
  };
  for (const path of paths) {
    const res = await page.evaluate(async (p) => {
      const r = await fetch(p);
      return { status: r.status, body: (await r.json()) as unknown };
    }, path);
    t.true(res.status === 200 || res.status === 503, `${path}: ${res.status}`);
    walk(path, '', res.body);
  }
  t.deepEqual(bad, []);
  // Installed variants carry their precision as a structure the page renders, not a stringified object.
  const models = await page.evaluate(async () => (await fetch('/api/models')).json());
  for (const m of (models as { installed: Array<{ variants: Array<{ quant: unknown }> }> }).installed)
    for (const v of m.variants)
      t.like(v.quant, { weights: String((v.quant as { weights: string }).weights) });
});

test.serial(
  'models & placement: the slots with status and reasons, pin controls, and how to pull the first models',
  async (t) => {
    const { agent, page } = t.context;
    await page.goto(`${agent.url}/#/models`);
    await page.waitForSelector('[data-testid="slots"]');
    const rows = await page.locator('[data-testid="slots"] tbody tr').allTextContents();
    if (engineAvailability().available) {
      // The fixture models are installed and the runtime placed each slot on them.
      for (const slot of ['voice.vad', 'voice.asr', 'voice.llm', 'vision.vlm'])
        t.true(
          rows.some((r) => r.startsWith(slot) && /serving/.test(r)),
          `${slot} not serving:\n${rows.join('\n')}`,
        );
      // Each language model's host says where its start went: host, reading the weights, MNN's load, warm-up.
      const hosts = await page
        .locator('table', { hasText: 'In flight' })
        .locator('tbody tr')
        .allTextContents();
      t.true(
        hosts.some((r) =>
          /host [\d.]+ m?s, read [\d.]+ m?s \(\d+ [KM]iB\), MNN load [\d.]+ m?s, warm-up [\d.]+ m?s/.test(r),
        ),
        hosts.join('\n'),
      );
      const installed = await page
        .locator('table', { hasText: 'Variants' })
        .locator('tbody tr')
        .allTextContents();
      t.deepEqual(installed.map((r) => r.split('1.0.0')[0]).sort(), [
        'silero-vad',
        'tiny-llm',
        'tiny-omni-audio',
        'tiny-vlm',
      ]);
    } else {
      // Without the engine no fixtures were imported: the page says how to get the first models.
      await page.waitForSelector('[data-testid="no-models"]');
      t.regex((await page.getByTestId('no-models').textContent()) ?? '', /mnn-edge models pull/);
      t.true(
        rows.some((r) => r.startsWith('voice.llm') && /failed/.test(r)),
        rows.join('\n'),
      );
    }
    // Pin the LLM slot to the CPU with 2 threads through the page; the runtime records it and Unpin comes alive.
    const llmRow = page.locator('[data-testid="slots"] tbody tr', { hasText: 'voice.llm' });
    await llmRow.getByLabel('Threads for voice.llm').fill('2');
    await llmRow.getByRole('button', { name: 'Pin', exact: true }).click();
    await page.waitForFunction(() =>
      [...document.querySelectorAll('[data-testid="slots"] tbody tr')].some(
        (r) =>
          r.textContent?.startsWith('voice.llm') &&
          !r.querySelector<HTMLButtonElement>('button:nth-of-type(2)')?.disabled,
      ),
    );
    const placement = (await page.evaluate(async () => (await fetch('/api/placement')).json())) as {
      pins: Record<string, unknown>;
    };
    t.deepEqual(placement.pins['voice.llm'], { backend: 'cpu', threads: 2 });
    await screenshot(page, 'models');
    await page
      .locator('[data-testid="slots"] tbody tr', { hasText: 'voice.llm' })
      .getByRole('button', { name: 'Unpin' })
      .click();
    await page.waitForFunction(async () => {
      const p = (await (await fetch('/api/placement')).json()) as { pins: Record<string, unknown> };
      return p.pins['voice.llm'] === undefined;
    });
    // A version an OTA job selected is traced to that job's own id on the page (it once read "ota").
    const runtime = agent.runtime()!;
    await runtime.setModelVersion('tiny-llm', '1.0.0', 'job-e2e');
    const ota = llmRow.getByTestId('slot-ota');
    await ota.waitFor();
    t.is(await ota.textContent(), 'version 1.0.0 set by OTA job job-e2e');
    await runtime.clearModelVersion('tiny-llm', 'job-e2e');
    await ota.waitFor({ state: 'detached' });
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
    // Three voice turns through the browser: each waits up to 90 s on a busy machine, past ava's 3-minute
    // silence limit together.
    t.timeout(10 * 60_000);
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
      // MNN is here and the fixture models were imported: voice must run.
      t.fail(`voice unavailable although the engine is: ${workloads.voice.reason}`);
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
      // The turn's latencies arrive when the turn ends: speech starts on the first sentence while the LLM still
      // decodes, so on a slow machine (an arm64 daemon under emulation) playback comes well before that row.
      await page.waitForFunction(
        () => document.querySelectorAll('[data-testid="latencies"] tbody tr').length >= 1,
        null,
        { timeout: 90_000 },
      );
      await screenshot(page, 'voice');

      // Push-to-talk: a new capture plays the fixture from its start; audio goes up only while the button is held.
      await page.getByTestId('voice-start').click();
      await page.getByTestId('voice-mode').selectOption('push-to-talk');
      await page.getByTestId('voice-start').click();
      await page.waitForFunction(
        () =>
          /hold the button/.test(document.querySelector('[data-testid="voice-state"]')?.textContent ?? ''),
        null,
        { timeout: 90_000 },
      );
      const ptt = page.getByTestId('voice-ptt');
      await ptt.dispatchEvent('pointerdown');
      await new Promise((r) => setTimeout(r, 4500));
      await ptt.dispatchEvent('pointerup');
      await page.waitForFunction(
        () => document.querySelectorAll('[data-testid="latencies"] tbody tr').length >= 1,
        null,
        {
          timeout: 90_000,
        },
      );
      t.true((await page.locator('.turn').count()) >= 1);
      await screenshot(page, 'voice-ptt');
      // Say: typed text is spoken through the same session, as a turn without a transcript.
      const rowsBefore = await page.locator('[data-testid="latencies"] tbody tr').count();
      await page.getByTestId('voice-say-text').fill('Testing the speaker.');
      await page.getByTestId('voice-say').click();
      await page.waitForFunction(
        (n) => document.querySelectorAll('[data-testid="latencies"] tbody tr').length > n,
        rowsBefore,
        { timeout: 60_000 },
      );
      t.is(
        await page.locator('.turn.said [data-testid="reply"]').last().textContent(),
        'Testing the speaker.',
      );
      await page.getByTestId('voice-start').click();
      return;
    }
    await screenshot(page, 'voice');
  },
);

test.serial(
  'vision: the fake camera plays, a snapshot is asked about, and watch mode fills the timeline',
  async (t) => {
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
    // With the VLM configured and the engine here, the snapshot goes to the device with a question.
    const vision = (await page.evaluate(async () => (await fetch('/api/workloads')).json())) as {
      vision: { available: boolean };
    };
    t.is(vision.vision.available, engineAvailability().available, 'vision runs exactly when the engine does');
    if (vision.vision.available) {
      await page.getByTestId('ask').click();
      await page.waitForFunction(
        () => /\(\d+ ms\)$/.test(document.querySelector('[data-testid="answer"]')?.textContent ?? ''),
        null,
        { timeout: 90_000 },
      );
      t.true(((await page.getByTestId('answer').textContent()) ?? '').length > 0);
      // Watch mode: a frame every 3 s; the first one is always answered (trigger "first").
      await page.getByTestId('watch').click();
      await page.waitForSelector('[data-testid="timeline"] li', { timeout: 60_000 });
      await page.getByTestId('watch').click();
      t.regex((await page.getByTestId('watch').textContent()) ?? '', /Start watching/);
    } else {
      t.is(await page.getByTestId('ask').isDisabled(), true);
    }
    await screenshot(page, 'vision');
  },
);

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

test.serial('without a loadable engine or a reachable broker, each page says so and why', async (t) => {
  // A real loader pointed at an addon that is not there: what a board without MNN installed reports.
  const missing = createAddonLoader([join(modelFixturesDir, 'no-such-addon', 'mnn_edge_engine.node')]);
  const agent = await startDashboardAgent({
    root: rock5b,
    availability: () => missing.availability(),
    // Port 9 (discard) is closed on loopback: a broker that cannot be reached.
    brokerUrl: 'mqtt://127.0.0.1:9',
    workloads: { voice: {}, vision: {} },
  });
  t.teardown(() => agent.stop());
  const page = await t.context.browser.context.newPage();
  t.teardown(() => page.close());
  await login(page, agent.url, agent.token);
  t.regex(
    (await page.getByTestId('engine-unavailable').textContent()) ?? '',
    /^Engine not availableThe engine addon is not built \(looked for .*no-such-addon\/mnn_edge_engine\.node/,
  );
  // The fleet's first connection attempt fails within moments; the open overview re-reads its status and
  // shows it without a reload.
  await page.waitForSelector('[data-testid="broker-unreachable"]', { timeout: 20_000 });
  t.regex(
    (await page.getByTestId('broker-unreachable').textContent()) ?? '',
    /^Broker unreachableThe fleet broker at mqtt:\/\/127\.0\.0\.1:9 cannot be reached \(.*ECONNREFUSED.*\)/,
  );
  await screenshot(page, 'overview-degraded');
  await page.goto(`${agent.url}/#/voice`);
  await page.waitForSelector('[data-testid="engine-unavailable"]');
  t.regex(
    (await page.getByTestId('engine-unavailable').textContent()) ?? '',
    /^Engine not availableVoice needs the MNN engine, which is not available here: the engine addon is not built/,
  );
  t.is(await page.getByTestId('voice-start').count(), 0);
  await screenshot(page, 'voice-no-engine');
  await page.goto(`${agent.url}/#/vision`);
  await page.waitForSelector('[data-testid="engine-unavailable"]');
  // The camera still works, so it can be checked before the engine is installed.
  t.is(await page.getByTestId('camera-start').count(), 1);
});

test.serial(
  'over TLS: the session cookie is Secure and the live telemetry socket runs on wss://',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-tls-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const agent = await startDashboardAgent({ root: rock5b, tls: selfSignedCert(dir) });
    t.teardown(() => agent.stop());
    t.regex(agent.url, /^https:/);
    const page = await t.context.browser.context.newPage();
    t.teardown(() => page.close());
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await login(page, agent.url, agent.token);
    const session = (await t.context.browser.context.cookies(agent.url)).find(
      (c) => c.name === 'mnn_edge_session',
    );
    t.true(session?.secure);
    await page.goto(`${agent.url}/#/telemetry`);
    await page.waitForFunction(
      () => document.querySelector('[data-testid="live-state"]')?.textContent === 'Live',
    );
    t.true(sockets.some((u) => u.startsWith('wss://127.0.0.1:') && u.endsWith('/api/telemetry/live')));
  },
);
