import { chatPage } from './pages/chat.js';
import { loginPage } from './pages/login.js';
import { logsPage } from './pages/logs.js';
import { modelsPage } from './pages/models.js';
import { otaPage } from './pages/ota.js';
import { overviewPage } from './pages/overview.js';
import { settingsPage } from './pages/settings.js';
import { telemetryPage } from './pages/telemetry.js';
import { visionPage } from './pages/vision.js';
import { voicePage } from './pages/voice.js';
import { ApiError, createApi } from './ui/api.js';
import { clear, h, notice } from './ui/dom.js';
import type { Page, PageContext, PageView } from './ui/page.js';

// The shell: a navigation bar and one page at a time, chosen by the URL hash (so the agent serves a single
// index.html and a reload keeps the page). An unauthenticated API answer anywhere sends the user to login.

const ROUTES: Array<{ route: string; title: string; page: Page }> = [
  { route: 'overview', title: 'Overview', page: overviewPage },
  { route: 'models', title: 'Models & placement', page: modelsPage },
  { route: 'telemetry', title: 'Telemetry', page: telemetryPage },
  { route: 'chat', title: 'Chat', page: chatPage },
  { route: 'voice', title: 'Voice', page: voicePage },
  { route: 'vision', title: 'Vision', page: visionPage },
  { route: 'settings', title: 'Settings', page: settingsPage },
  { route: 'ota', title: 'OTA', page: otaPage },
  { route: 'logs', title: 'Logs', page: logsPage },
];

const app = document.getElementById('app')!;
let current: PageView | undefined;
let generation = 0;

const api = createApi(() => {
  if (routeOf(location.hash) !== 'login') location.hash = '#/login';
});

function routeOf(hash: string): string {
  const r = hash.replace(/^#\/?/, '');
  return r === '' ? 'overview' : r;
}

const ctx: PageContext = {
  api,
  navigate(route) {
    if (routeOf(location.hash) === route) void render();
    else location.hash = `#/${route}`;
  },
};

function nav(active: string): HTMLElement {
  const logout = h('button', { class: 'link', type: 'button', 'data-testid': 'logout' }, 'Log out');
  logout.addEventListener('click', async () => {
    await api.send('POST', '/api/logout').catch(() => undefined);
    ctx.navigate('login');
  });
  return h(
    'header',
    { class: 'topbar' },
    h('span', { class: 'brand' }, 'mnn-edge'),
    h(
      'nav',
      {},
      ...ROUTES.map((r) =>
        h(
          'a',
          {
            href: `#/${r.route}`,
            class: r.route === active ? 'active' : undefined,
            'aria-current': r.route === active ? 'page' : undefined,
          },
          r.title,
        ),
      ),
    ),
    logout,
  );
}

async function render(): Promise<void> {
  const mine = ++generation;
  current?.dispose?.();
  current = undefined;
  const route = routeOf(location.hash);
  clear(app);
  if (route === 'login') {
    current = await loginPage(ctx);
    app.append(current.element);
    return;
  }
  const entry = ROUTES.find((r) => r.route === route);
  const main = h('main', { 'data-page': route });
  app.append(nav(route), main);
  if (entry === undefined) {
    main.append(notice('warn', 'No such page', `There is no page "${route}". Pick one from the menu.`));
    return;
  }
  document.title = `${entry.title} · mnn-edge`;
  main.append(h('p', { class: 'loading' }, 'Loading…'));
  try {
    const view = await entry.page(ctx);
    if (mine !== generation) {
      view.dispose?.();
      return;
    }
    current = view;
    clear(main);
    main.append(view.element);
  } catch (err) {
    if (mine !== generation) return;
    clear(main);
    if (err instanceof ApiError && err.status === 401) return;
    const message = err instanceof Error ? err.message : String(err);
    main.append(notice('error', `${entry.title} could not be loaded`, message, 'page-error'));
  }
}

window.addEventListener('hashchange', () => void render());
void render();
