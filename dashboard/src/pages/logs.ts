import type { LogRecord } from '../../../agent/dashboard-api/wire.js';
import { h } from '../ui/dom.js';
import type { Page } from '../ui/page.js';

// A bounded tail of the agent's log, polled for new lines; the page keeps at most MAX_LINES rows itself.

const MAX_LINES = 500;

export const logsPage: Page = async (ctx) => {
  const level = h(
    'select',
    { 'aria-label': 'Minimum level' },
    ...['debug', 'info', 'warn', 'error'].map((l) => h('option', { value: l, selected: l === 'info' }, l)),
  );
  const list = h('ol', { class: 'logs', 'data-testid': 'log-lines' });
  let after: number | undefined;
  const row = (r: LogRecord) => {
    const { ts, level: lv, ns, msg, ...rest } = r;
    const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
    return h(
      'li',
      { class: `lv-${lv}` },
      h('time', {}, ts.slice(11, 23)),
      h('b', {}, lv),
      h('span', { class: 'ns' }, ns),
      `${msg}${extra}`,
    );
  };
  const poll = async () => {
    const q = new URLSearchParams({ limit: '200', level: level.value });
    if (after !== undefined) q.set('after', String(after));
    const res = await ctx.api.get<{ records: LogRecord[]; last: number }>(`/api/logs?${q}`);
    after = res.last;
    list.append(...res.records.map(row));
    while (list.children.length > MAX_LINES) list.firstElementChild!.remove();
    list.lastElementChild?.scrollIntoView({ block: 'nearest' });
  };
  level.addEventListener('change', () => {
    after = undefined;
    list.replaceChildren();
    void poll();
  });
  await poll();
  const timer = setInterval(() => void poll().catch(() => undefined), 2000);
  return {
    element: h(
      'div',
      { class: 'page' },
      h('h1', {}, 'Logs'),
      h('p', { class: 'toolbar' }, 'Minimum level ', level),
      list,
    ),
    dispose: () => clearInterval(timer),
  };
};
