import { engineAvailability } from '../../engine/index.js';
import { dashboardTest } from './dashboard-setup.js';
import { login, screenshot } from './harness.js';

// The dashboard in real Chromium, its session and overview: login and a wrong token, the overview of the
// fixture board, every API answer rendered, the OTA and logs pages, logout. The workload pages are in
// dashboard-pages.test.ts, the degraded and TLS agents in dashboard-agents.test.ts; dashboard-setup.ts is shared.

const test = dashboardTest({ loggedIn: false });

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
