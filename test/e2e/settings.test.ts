// Slots and settings from the dashboard, against the real daemon (`mnn-edge run` as its own process, the fixture
// models in its store) and real Chromium: "Use for voice.llm" makes the slot serve the model, with the planner's
// reasons on the page; a Settings change is saved, logged, kept across a restart and printed by
// `mnn-edge config history`; a value out of range is refused with the schema's message and changes nothing; a
// change made meanwhile by someone else (a PATCH from outside) is shown as a conflict naming the revision; and
// after a restart with a memory budget that has no room left, "Use for vision.vlm" is the planner's refusal,
// with everything as it was; a damaged run-time settings file is shown on Overview, Settings and Models.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import anyTest from 'ava';
import type { Page } from 'playwright-core';
import { OVERLAY_FILE } from '../../agent/config/overlay-store.js';
import { STORE_FILE } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelStore } from '../../models/index.js';
import { mediaFixturesDir, modelFixturesDir, repoRoot } from '../helpers/paths.js';
import { type AgentDaemon, startAgentDaemon } from '../helpers/run-agent.js';
import { skipWithLine } from '../helpers/skip.js';
import { until } from '../helpers/until.js';
import { buildDashboard, launchChromium, login, screenshot } from './harness.js';

/** The parts of the agent's answers the test reads. */
interface Body {
  revision: number;
  keys: Array<{ key: string; value: unknown }>;
  slotStates: Array<{ slot: string; phase: string }>;
  placement: { budget: { ramBytes: number; plannedBytes: number; budgetBytes: number } };
}

type Daemon = AgentDaemon<Body>;

// Module state, not t.context: the daemon is replaced (restarted) by one test and used by the next.
const run = {} as {
  dir: string;
  dataDir: string;
  daemon: Daemon;
  browser: Awaited<ReturnType<typeof launchChromium>>;
  page: Page;
  budget: { ramBytes: number; plannedBytes: number; budgetBytes: number };
};
const test = anyTest;

const startDaemon = (dataDir: string, config: Record<string, unknown>) =>
  startAgentDaemon<Body>(dataDir, config);

async function slotPhase(d: Daemon, slot: string): Promise<string | undefined> {
  const p = await d.call('GET', '/api/placement');
  return p.body.slotStates.find((s) => s.slot === slot)?.phase;
}

const why = (() => {
  const a = engineAvailability();
  return a.available ? undefined : unavailableMessage(a.reason);
})();

if (why) {
  skipWithLine(`SKIP dashboard slots and settings: ${why}`, anyTest);
} else {
  test.before(async () => {
    buildDashboard();
    run.dir = mkdtempSync(join(tmpdir(), 'mnn-edge-e2e-settings-'));
    run.dataDir = join(run.dir, 'data');
    mkdirSync(run.dataDir);
    const db = openStore(join(run.dataDir, STORE_FILE), { migrations: allMigrations });
    const { store } = ModelStore.open({ dataDir: run.dataDir, db, log: createMemoryLogger() });
    for (const name of ['tiny-llm', 'tiny-vlm', 'silero-vad'])
      await store.import(join(modelFixturesDir, name), { version: '1.0.0' });
    store.close();
    db.close();
    run.daemon = await startDaemon(run.dataDir, { tags: ['lab'] });
    run.browser = await launchChromium(join(mediaFixturesDir, 'speech-hello-16k.wav'));
    run.page = await run.browser.context.newPage();
    await login(run.page, run.daemon.url, run.daemon.token);
  });
  test.after.always(async () => {
    await run.browser?.close();
    await run.daemon?.stop();
    if (run.dir) rmSync(run.dir, { recursive: true, force: true });
  });

  test.serial(
    '"Use for voice.llm" on an installed model: the slot serves it, with the reasons',
    async (t) => {
      const { daemon, page } = run;
      await page.goto(`${daemon.url}/#/models`);
      // Only the slots the model's task fits are offered.
      await page.getByTestId('use-tiny-llm-for-voice.llm').waitFor();
      t.is(await page.getByTestId('use-tiny-llm-for-vision.vlm').count(), 0);
      t.is(await page.locator('[data-testid^="use-silero-vad-for-"]').count(), 1);
      await page.getByTestId('use-tiny-llm-for-voice.llm').click();
      const result = page.getByTestId('slot-change-result');
      await result.waitFor({ timeout: 120_000 });
      t.regex((await result.textContent()) ?? '', /Settings revision 1: voice\.llm is serving/);
      t.regex((await page.getByTestId('slot-change-summary').textContent()) ?? '', /tiny-llm@1\.0\.0/);
      t.true((await page.getByTestId('slot-change-reasons').locator('li').count()) > 0);
      t.is(await page.getByTestId('slot-model-voice.llm').inputValue(), 'model:tiny-llm');
      t.is(await slotPhase(daemon, 'voice.llm'), 'serving');
      await page.getByTestId('slot-phase-voice.llm').getByText('serving').waitFor();
      const p = await daemon.call('GET', '/api/placement');
      run.budget = p.body.placement.budget;
      await screenshot(page, 'settings-use-for');
    },
  );

  test.serial(
    'a value out of range is refused with the schema message; nothing is half-applied',
    async (t) => {
      const { daemon, page } = run;
      await page.goto(`${daemon.url}/#/settings`);
      await page.getByTestId('setting-voice.systemPrompt').fill('Answer like a pirate.');
      await page.getByTestId('setting-voice.maxNewTokens').fill('99999');
      await page.getByTestId('settings-save').click();
      const error = page.getByTestId('settings-error');
      await error.waitFor();
      t.regex((await error.textContent()) ?? '', /voice\.maxNewTokens: expected a number <= 8192, got 99999/);
      const cfg = await daemon.call('GET', '/api/config');
      t.is(cfg.body.revision, 1);
      t.not(cfg.body.keys.find((k) => k.key === 'voice.systemPrompt')?.value, 'Answer like a pirate.');
    },
  );

  test.serial(
    'a change made meanwhile elsewhere is a conflict naming the revision; values reload',
    async (t) => {
      const { daemon, page } = run;
      await page.goto(`${daemon.url}/#/settings`);
      await page.getByTestId('settings-revision').getByText('Revision 1.').waitFor();
      const other = await daemon.call('PATCH', '/api/config', { tags: ['lab', 'kitchen'] });
      t.is(other.status, 200);
      await page.getByTestId('setting-voice.systemPrompt').fill('Answer like a pirate.');
      await page.getByTestId('settings-save').click();
      const conflict = page.getByTestId('settings-conflict');
      await conflict.waitFor();
      t.regex((await conflict.textContent()) ?? '', /now at revision 2/);
      await page.getByTestId('settings-revision').getByText('Revision 2.').waitFor();
      t.is(await page.getByTestId('setting-tags').inputValue(), 'lab, kitchen');
      await screenshot(page, 'settings-conflict');
    },
  );

  test.serial(
    'a Settings change is logged, kept across a restart and in `mnn-edge config history`',
    async (t) => {
      const { page } = run;
      await page.getByTestId('setting-voice.systemPrompt').fill('Answer like a pirate.');
      await page.getByTestId('setting-voice.maxNewTokens').fill('64');
      await page.getByTestId('settings-save').click();
      const saved = page.getByTestId('settings-saved');
      await saved.waitFor();
      t.regex(
        (await saved.textContent()) ?? '',
        /Saved as revision 3.*Applied now: voice\.maxNewTokens, voice\.systemPrompt/,
      );
      // The page reloads the keys' sources after the save answered: wait for that state, then read it.
      const meta = page.getByTestId('meta-voice.systemPrompt');
      await meta.getByText(/set at run time/).waitFor();
      t.regex((await meta.textContent()) ?? '', /set at run time · applies at once/);
      const log = page.getByTestId('change-log');
      t.regex(
        (await log.locator('tbody tr').first().textContent()) ?? '',
        /dashboard \(session from .*voice\.systemPrompt/,
      );
      t.regex((await log.textContent()) ?? '', /"Answer like a pirate\."/);
      // Read-only: the keys that could lock the user out, and the secrets.
      t.regex((await page.getByTestId('file-only').textContent()) ?? '', /http\.port.*change in the file/);

      // Restarted with a memory budget that holds what runs now and nothing more (for the next test).
      await run.daemon.stop();
      const history = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', 'agent/cli/mnn-edge.ts', 'config', 'history', '--data-dir', run.dataDir],
        { cwd: repoRoot },
      );
      t.regex(
        history.stdout,
        /revision 3 .*dashboard \(session from [^\n]*\n(.*\n)* {2}voice\.systemPrompt: .* -> "Answer like a pirate\."/,
      );
      const { ramBytes, plannedBytes } = run.budget;
      const MiB = 1024 * 1024;
      const reserveMiB = Math.floor((Math.floor(ramBytes * 0.75) - plannedBytes) / MiB) - 8;
      run.daemon = await startDaemon(run.dataDir, { tags: ['lab'], runtime: { reserveMiB } });
      await login(page, run.daemon.url, run.daemon.token);
      await page.goto(`${run.daemon.url}/#/settings`);
      t.is(await page.getByTestId('setting-voice.systemPrompt').inputValue(), 'Answer like a pirate.');
      t.is(await page.getByTestId('setting-voice.maxNewTokens').inputValue(), '64');
      t.is(await page.getByTestId('change-log').locator('tbody tr').count(), 3);
      await screenshot(page, 'settings-after-restart');
    },
  );

  test.serial('the planner refuses a slot it has no memory for: shown, and nothing changed', async (t) => {
    const { daemon, page } = run;
    // The restart above loads voice.llm again; on a busy machine that outlasts the page load. Refusing must leave
    // a serving slot serving, so start from one.
    await until(
      async () => (await slotPhase(daemon, 'voice.llm')) === 'serving',
      'voice.llm serving after the restart',
      { timeoutMs: 180_000, stepMs: 250 },
    );
    await page.goto(`${daemon.url}/#/models`);
    await page.getByTestId('use-tiny-vlm-for-vision.vlm').click();
    const refused = page.getByTestId('settings-refused');
    await refused.waitFor({ timeout: 120_000 });
    t.regex(
      (await refused.textContent()) ?? '',
      /Refused: vision\.vlm was not changed.*slots\.vision\.vlm: the planner cannot place it: .*MiB.*Nothing was changed/s,
    );
    const cfg = await daemon.call('GET', '/api/config');
    t.is(cfg.body.revision, 3);
    t.false(cfg.body.keys.some((k) => k.key.startsWith('slots.vision.vlm')));
    t.is(await page.getByTestId('slot-model-vision.vlm').inputValue(), 'none');
    t.is(await slotPhase(daemon, 'voice.llm'), 'serving');
    t.is(await slotPhase(daemon, 'vision.vlm'), undefined);
    await screenshot(page, 'settings-refused');
  });

  test.serial(
    'a damaged run-time settings file is shown on the dashboard; the last good revision runs',
    async (t) => {
      await run.daemon.stop();
      writeFileSync(join(run.dataDir, OVERLAY_FILE), '{"format":1,');
      run.daemon = await startDaemon(run.dataDir, { tags: ['lab'] });
      const { daemon, page } = run;
      await login(page, daemon.url, daemon.token);
      const onOverview = page.getByTestId('settings-problem');
      await onOverview.waitFor();
      t.regex(
        (await onOverview.textContent()) ?? '',
        /Run-time settings not used.*not valid JSON.*revision 3/s,
      );
      await page.goto(`${daemon.url}/#/settings`);
      await page.getByTestId('settings-problem').waitFor();
      t.is(await page.getByTestId('setting-voice.systemPrompt').inputValue(), 'Answer like a pirate.');
      await page.goto(`${daemon.url}/#/models`);
      await page.getByTestId('slot-assign').waitFor();
      t.is(await page.getByTestId('settings-problem').count(), 1);
      await screenshot(page, 'settings-damaged-overlay');
    },
  );
}
