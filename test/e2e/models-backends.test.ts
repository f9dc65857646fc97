// The Models page on this machine's own board (detection plus the engine's per-backend evidence chains): the pin
// form offers exactly the backends a pin is allowed to name — the list a refused pin quotes — with the unusable
// ones greyed out and their reason; and the load times of each model, cold (GPU kernels compiled) and warm
// (kernel cache used), once Vulkan has loaded it twice. Real Chromium, real MNN engine hosts, tiny-llm.
import { join } from 'node:path';
import anyTest, { type TestFn } from 'ava';
import type { BrowserContext, Page } from 'playwright-core';
import { detectedBoard } from '../../agent/runtime/module.js';
import { engineCompiledIn, engineProbes } from '../../agent/runtime/serving/backend-health.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { testBoard } from '../engine/_slots.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';
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

function missing(): string | undefined {
  const a = engineAvailability();
  if (!a.available) return unavailableMessage(a.reason);
  const vulkan = a.info.probes?.find((p) => p.name === 'vulkan');
  const failed = vulkan?.steps.find((s) => s.status === 'fail');
  if (!vulkan?.compiledIn || failed) return `no usable Vulkan here (${failed?.detail ?? 'not compiled in'})`;
  return undefined;
}

const why = missing();
if (why) {
  skipWithLine(`SKIP Models page backends and load times: ${why}`, anyTest);
} else {
  const availability = engineAvailability();
  // This machine as the daemon plans it, with one thread per host as everywhere in the tests.
  const board = {
    ...detectedBoard('/', engineCompiledIn(availability), engineProbes(availability)),
    threadAdvice: testBoard.threadAdvice,
  };

  test.before(async (t) => {
    buildDashboard();
    t.context.agent = await startDashboardAgent({
      root: '/',
      board: () => board,
      fixtures: ['tiny-llm'],
      slots: { 'voice.llm': { model: 'tiny-llm' } },
    });
    t.context.browser = await launchChromium(join(mediaFixturesDir, 'speech-hello-16k.wav'));
    t.context.page = await t.context.browser.context.newPage();
    await login(t.context.page, t.context.agent.url, t.context.agent.token);
  });
  test.after.always(async (t) => {
    await t.context.browser?.close();
    await t.context.agent?.stop();
  });

  const llmRow = (page: Page) => page.locator('[data-testid="slots"] tbody tr', { hasText: 'voice.llm' });

  test.serial(
    'the pin form offers what a pin may name here; unusable backends are greyed with their reason',
    async (t) => {
      const { agent, page } = t.context;
      await page.goto(`${agent.url}/#/models`);
      await page.waitForSelector('[data-testid="pin-backend-voice.llm"]');
      const options = await page
        .getByTestId('pin-backend-voice.llm')
        .locator('option')
        .evaluateAll((els) =>
          (els as HTMLOptionElement[]).map((o) => ({
            value: o.value,
            disabled: o.disabled,
            text: o.textContent ?? '',
          })),
        );
      // The refusal of an unknown backend names this board's values: the same list.
      const refused = (await page.evaluate(async () => {
        const res = await fetch('/api/runtime/pins/voice.llm', {
          method: 'PUT',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ backend: 'tpu' }),
        });
        return { status: res.status, body: (await res.json()) as { error: { message: string } } };
      })) as { status: number; body: { error: { message: string } } };
      t.is(refused.status, 400);
      const m = /this board allows ([^;]+?)(?:; known but unusable here: (.*))?$/.exec(
        refused.body.error.message,
      );
      t.truthy(m, refused.body.error.message);
      const allowed = m![1]!.split(', ');
      t.deepEqual(
        options.filter((o) => !o.disabled).map((o) => o.value),
        allowed,
      );
      t.true(allowed.includes('vulkan') && allowed.includes('cpu'), allowed.join(', '));
      // Each backend the refusal calls unusable is in the form, disabled, with the same reason.
      const unusable = [...(m![2] ?? '').matchAll(/(\w+) \((.*?)\)(?=; \w+ \(|$)/g)].map((u) => ({
        backend: u[1]!,
        reason: u[2]!,
      }));
      for (const u of unusable) {
        const o = options.find((x) => x.value === u.backend);
        t.true(o?.disabled, `${u.backend} should be disabled: ${JSON.stringify(o)}`);
        t.is(o?.text, `${u.backend}: not usable (${u.reason})`);
      }
      // OpenCL here: compiled in, but pocl offers only a CPU device — said as such, not "not compiled".
      const opencl = options.find((o) => o.value === 'opencl');
      if (availability.available && engineCompiledIn(availability)?.includes('opencl')) {
        t.true(opencl?.disabled);
        t.regex(opencl?.text ?? '', /no OpenCL GPU device/);
      }
      await screenshot(page, 'models-pin-backends');
    },
  );

  test.serial(
    'load times: the model on Vulkan cold (kernels compiled), then warm (cache used), and on the CPU',
    async (t) => {
      // Three loads, the first compiling every Vulkan kernel: minutes on a busy machine, longer than ava's
      // 3-minute silence limit, which would otherwise end the run with this test pending.
      t.timeout(15 * 60_000);
      const { agent, page } = t.context;
      await page.goto(`${agent.url}/#/models`);
      const pinTo = async (backend: string) => {
        await llmRow(page).getByTestId('pin-backend-voice.llm').selectOption(backend);
        await llmRow(page).getByRole('button', { name: 'Pin', exact: true }).click();
        // Until the runtime serves the slot on that backend with only its host left (the old one drained).
        const deadline = Date.now() + 240_000;
        for (;;) {
          const res = await fetch(`${agent.url}/api/placement`, {
            headers: { Authorization: `Bearer ${agent.token}` },
          });
          const p = (await res.json()) as {
            serving: Record<string, string>;
            instances: Array<{ status: string }>;
          };
          const key = p.serving['voice.llm'];
          if (key?.includes(`|${backend} `) && p.instances.length === 1 && p.instances[0]?.status === 'ready')
            return;
          if (Date.now() > deadline) throw new Error(`voice.llm not on ${backend}: ${JSON.stringify(p)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      };
      await pinTo('vulkan'); // first Vulkan load: no kernel cache yet
      await pinTo('cpu'); // the Vulkan host exits cleanly and its cache is sealed
      await pinTo('vulkan'); // second Vulkan load: the cache is there
      const runtimeState = async () =>
        (await page.evaluate(async () => (await fetch('/api/runtime')).json())) as {
          state: {
            loadTimes: Array<{ backend: string; coldMs?: number; warmMs?: number }>;
            instances: Array<{ key: string; load?: { ms: number; cache: string } }>;
          };
        };
      const state = await runtimeState();
      const book = state.state.loadTimes.find((l) => l.backend === 'vulkan');
      t.true(book?.coldMs !== undefined && book.warmMs !== undefined, JSON.stringify(state.state));
      // The page refreshes itself every few seconds.
      const loads = page.getByTestId('load-times');
      await page.waitForFunction(
        () => {
          const rows = [...document.querySelectorAll('[data-testid="load-times"] tbody tr')].map(
            (r) => r.textContent,
          );
          return rows.some((r) => r?.includes('vulkan') && /\d ms.*\d ms/.test(r));
        },
        undefined,
        { timeout: 30_000 },
      );
      const rows = await loads
        .locator('tbody tr')
        .evaluateAll((trs) =>
          trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
        );
      const vulkan = rows.find((r) => r[1] === 'vulkan');
      const cpu = rows.find((r) => r[1] === 'cpu');
      t.regex(vulkan?.[0] ?? '', /^tiny-llm@1\.0\.0\//);
      t.regex(vulkan?.[2] ?? '', /^[\d,]+ ms$/, JSON.stringify(rows));
      t.regex(vulkan?.[3] ?? '', /^[\d,]+ ms$/, JSON.stringify(rows));
      t.is(vulkan?.[4], '2');
      t.regex(cpu?.[2] ?? '', /^[\d,]+ ms \(no kernel cache on cpu\)$/, JSON.stringify(rows));
      // The figures are the runtime's own, per instance too: the serving Vulkan host says it used the cache.
      t.is(vulkan?.[2], `${book!.coldMs!.toLocaleString('en')} ms`);
      t.is(vulkan?.[3], `${book!.warmMs!.toLocaleString('en')} ms`);
      t.is(state.state.instances[0]?.load?.cache, 'warm');
      const hosts = await page
        .locator('table', { hasText: 'In flight' })
        .locator('tbody tr')
        .allTextContents();
      t.true(
        hosts.some((h) => /warm: kernel cache used/.test(h)),
        hosts.join('\n'),
      );
      await screenshot(page, 'models-load-times');
    },
  );
}
