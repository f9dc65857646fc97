// A tiny element builder: enough to write pages as plain functions without a framework, and always through
// textContent, so values from the device can never inject markup.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(el: Element, children: readonly Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'number' ? String(c) : c);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** A card with a heading: the building block of every page. */
export function card(title: string, ...children: Child[]): HTMLElement {
  return h('section', { class: 'card' }, h('h2', {}, title), ...children);
}

/** A full-width notice for empty and degraded states: what is wrong and what to do. */
export function notice(
  kind: 'info' | 'warn' | 'error',
  title: string,
  body: string,
  testId?: string,
): HTMLElement {
  return h(
    'div',
    { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status', 'data-testid': testId },
    h('strong', {}, title),
    h('p', {}, ...withCode(body)),
  );
}

/** A reason from the agent as a sentence: capital first letter, as the notices print it. */
export function sentence(text: string): string {
  return text.length > 0 ? text[0]!.toUpperCase() + text.slice(1) : text;
}

/** Marks an element for tests and for people reading the DOM. */
export function tagged<T extends HTMLElement>(testId: string, el: T): T {
  el.dataset['testid'] = testId;
  return el;
}

/** `backticked` spans of agent messages (commands to run) shown as code. */
export function withCode(text: string): Array<Node | string> {
  return text.split('`').map((part, i) => (i % 2 === 1 ? h('code', {}, part) : part));
}

export function table(headers: readonly string[], rows: readonly Child[][]): HTMLTableElement {
  return h(
    'table',
    {},
    h('thead', {}, h('tr', {}, ...headers.map((x) => h('th', {}, x)))),
    h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c))))),
  );
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return 'unknown';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}

export function formatDuration(seconds: number): string {
  const d = Math.floor(seconds / 86400);
  const hh = Math.floor((seconds % 86400) / 3600);
  const mm = Math.floor((seconds % 3600) / 60);
  const ss = Math.floor(seconds % 60);
  if (d > 0) return `${d} d ${hh} h`;
  if (hh > 0) return `${hh} h ${mm} min`;
  if (mm > 0) return `${mm} min ${ss} s`;
  return `${ss} s`;
}

export function pill(text: string, kind: 'ok' | 'warn' | 'bad' | 'muted'): HTMLElement {
  return h('span', { class: `pill ${kind}` }, text);
}
