import { h } from '../ui/dom.js';
import { emptyServer, MCP_KEY, type ServerRow, serverRows } from '../ui/mcp-servers.js';
import { ACCESS_TEXT, type KeyRow, SOURCE_TEXT } from '../ui/settings-fields.js';

// The Settings form's list of MCP servers: a row each (name, URL, token), Add and Remove. A stored token is
// never shown, only that there is one: typing replaces it, "Clear token" drops it, leaving it keeps it.

function labelled(id: string, text: string, input: HTMLInputElement): HTMLElement {
  return h('span', { class: 'field' }, h('label', { for: id }, text), input);
}

function serverRow(r: ServerRow, i: number, remove: () => void, redraw: () => void): HTMLElement {
  const id = (what: string) => `mcp-${i}-${what}`;
  const input = (what: 'name' | 'url' | 'token', attrs: Record<string, string>) => {
    const el = h('input', { id: id(what), 'data-testid': id(what), ...attrs });
    el.value = r[what];
    el.addEventListener('input', () => {
      r[what] = el.value;
    });
    return el;
  };
  const name = input('name', { type: 'text', placeholder: 'home' });
  const url = input('url', { type: 'url', placeholder: 'http://homeassistant.local:8123/api/mcp' });
  const token = input('token', {
    type: 'password',
    autocomplete: 'new-password',
    placeholder: r.stored ? 'stored (type to replace)' : 'none',
  });
  const clear = r.stored
    ? h('button', { type: 'button', class: 'link', 'data-testid': id('clear-token') }, 'Clear token')
    : null;
  clear?.addEventListener('click', () => {
    r.stored = false;
    r.token = '';
    redraw();
  });
  const drop = h(
    'button',
    { type: 'button', class: 'link', 'data-testid': id('remove'), 'aria-label': `Remove server ${i + 1}` },
    'Remove',
  );
  drop.addEventListener('click', remove);
  return h(
    'div',
    { class: 'mcp-server', 'data-testid': 'mcp-server' },
    labelled(id('name'), `Server ${i + 1} name`, name),
    labelled(id('url'), 'URL', url),
    labelled(id('token'), 'Token', token),
    h('span', {}, clear, ' ', drop),
  );
}

/** The editor for voice.tools.mcp; rows() is what it holds now. */
export function mcpServersEditor(row: KeyRow): { element: HTMLElement; rows(): ServerRow[] } {
  const rows = serverRows(row.value);
  const list = h('div', { 'data-testid': 'mcp-servers' });
  const add = h('button', { type: 'button', class: 'secondary', 'data-testid': 'mcp-add' }, 'Add server');
  const redraw = () =>
    list.replaceChildren(
      ...(rows.length === 0 ? [h('p', { class: 'sub' }, 'No MCP servers: only the built-in tools.')] : []),
      ...rows.map((r, i) =>
        serverRow(
          r,
          i,
          () => {
            rows.splice(i, 1);
            redraw();
            add.focus();
          },
          redraw,
        ),
      ),
    );
  add.addEventListener('click', () => {
    rows.push(emptyServer());
    redraw();
    list.querySelector<HTMLInputElement>(`#mcp-${rows.length - 1}-name`)?.focus();
  });
  redraw();
  const element = h(
    'div',
    { class: 'field', 'data-key': MCP_KEY },
    h('strong', {}, 'MCP servers ', h('code', {}, MCP_KEY)),
    h(
      'small',
      { class: 'sub', 'data-testid': `meta-${MCP_KEY}` },
      `${SOURCE_TEXT[row.source]} · ${ACCESS_TEXT[row.access]} · their tools join the built-in ones (Home Assistant: its /api/mcp with a long-lived access token)`,
    ),
    list,
    h('p', { class: 'toolbar' }, add),
  );
  return { element, rows: () => rows };
}
