import { engineAvailability } from '../../engine/index.js';
import { dashboardTest } from './dashboard-setup.js';
import { screenshot } from './harness.js';

// The dashboard's workload pages in real Chromium, logged in: models & placement, telemetry, voice (the fake
// microphone) and vision (the fake camera), on the fixture agent of dashboard-setup.ts.

const test = dashboardTest({ loggedIn: true });

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
