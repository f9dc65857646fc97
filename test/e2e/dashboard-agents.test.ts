import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import type { BrowserContext } from 'playwright-core';
import { createAddonLoader } from '../../engine/index.js';
import { mediaFixturesDir, modelFixturesDir } from '../helpers/paths.js';
import { selfSignedCert } from '../helpers/tls.js';
import { rock5b } from './dashboard-setup.js';
import { buildDashboard, launchChromium, login, screenshot, startDashboardAgent } from './harness.js';

// The dashboard against agents of their own, in real Chromium: one without a loadable engine or a reachable
// broker (each page says so and why), one over TLS (Secure cookie, wss:// telemetry). No shared agent here.

const test = anyTest as TestFn<{ browser: { context: BrowserContext; close(): Promise<void> } }>;

test.before(async (t) => {
  buildDashboard();
  t.context.browser = await launchChromium(join(mediaFixturesDir, 'speech-hello-16k.wav'));
});

test.after.always(async (t) => {
  await t.context.browser?.close();
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
