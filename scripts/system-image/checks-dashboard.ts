// The dashboard from the host's Chromium through the forwarded port, as a user opens it: the login form, the
// pairing token, then the overview showing this board (what the agent detected in the guest) and its device id.
// The same Chromium and login steps as the e2e tests (test/e2e/harness.ts).
import { join } from 'node:path';
import { launchChromium, login, screenshot } from '../../test/e2e/harness.js';
import { mediaFixturesDir } from '../../test/helpers/paths.js';
import type { AgentApi, Checks } from './tier.js';

export async function dashboardLoads(agent: AgentApi, deviceId: string, checks: Checks): Promise<void> {
  const started = Date.now();
  const browser = await launchChromium(join(mediaFixturesDir, 'speech-hello-16k.wav'));
  try {
    const page = await browser.context.newPage();
    // Every page of the dashboard is its bundle and API reads from the emulated guest: generous waits.
    page.setDefaultTimeout(5 * 60_000);
    await login(page, `http://127.0.0.1:${agent.port}`, agent.token);
    const board = ((await page.getByTestId('board-name').textContent()) ?? '').trim();
    await page.waitForFunction(
      (id) => (document.querySelector('[data-page="overview"]')?.textContent ?? '').includes(id),
      deviceId,
    );
    const engine = await page.getByTestId('engine-unavailable').count();
    const shot = await screenshot(page, 'system-tier-overview');
    checks.check(
      "the dashboard loads in the host's Chromium: login with the pairing token, the overview shows the board",
      board.length > 0 && engine === 0,
      `board ${JSON.stringify(board)}, device ${deviceId}, engine ${engine === 0 ? 'available' : 'NOT available'}; ${shot}`,
      started,
    );
  } finally {
    await browser.close();
  }
}
