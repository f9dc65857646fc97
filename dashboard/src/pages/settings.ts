import type { ApiError } from '../ui/api.js';
import { card, h, notice, table, tagged } from '../ui/dom.js';
import { MCP_KEY, serversChange } from '../ui/mcp-servers.js';
import type { Page, PageContext } from '../ui/page.js';
import {
  ACCESS_TEXT,
  buildPatch,
  type ConfigView,
  type FieldDef,
  fileOnlyRows,
  formText,
  type KeyRow,
  SOURCE_TEXT,
  setPath,
  shortValue,
  TOOLS_GROUP,
  visibleFields,
} from '../ui/settings-fields.js';
import { settingsProblemNotice } from '../ui/settings-problem.js';
import { mcpServersEditor } from './settings-mcp.js';
import { errorNotice } from './slot-assign.js';

// What is safe to change while the agent runs (voice, vision watch, telemetry intervals, Wyoming, tags), each
// field with the source its value comes from and whether a change applies at once or after a restart; what could
// lock the user out (HTTP bind and port, TLS files, MQTT credentials) shown read-only; and the change log. A
// save is one merge patch guarded by the revision the page read: all of it applies, or none of it.

interface HistoryView {
  revision: number;
  entries: Array<{
    revision: number;
    at: string;
    who: string;
    changes: Array<{ key: string; old?: unknown; new?: unknown }>;
    note?: string;
  }>;
}

interface ChangeAnswer {
  revision: number;
  applied: string[];
  restartRequired: string[];
}

type Input = HTMLInputElement | HTMLTextAreaElement;

function fieldInput(f: FieldDef, row: KeyRow | undefined): Input {
  const id = `setting-${f.key}`;
  const attrs = { id, name: f.key, 'data-testid': id, 'aria-label': f.key };
  if (f.type === 'textarea') {
    const t = h('textarea', { ...attrs, rows: 3 });
    t.value = formText(f.type, row?.value);
    return t;
  }
  if (f.type === 'bool') return h('input', { ...attrs, type: 'checkbox', checked: row?.value === true });
  // Numbers as text: the agent's schema message (naming the key and the range) says what is wrong, not the browser.
  const input = h('input', {
    ...attrs,
    type: 'text',
    inputmode: f.type === 'int' || f.type === 'number' ? 'decimal' : undefined,
  });
  input.value = formText(f.type, row?.value);
  return input;
}

function fieldRow(
  f: FieldDef,
  row: KeyRow | undefined,
  input: Input,
  reset: (key: string) => void,
): HTMLElement {
  const source = row?.source ?? 'default';
  const back =
    source === 'overlay'
      ? h(
          'button',
          { type: 'button', class: 'link', 'data-testid': `reset-${f.key}` },
          "use the file's value",
        )
      : null;
  back?.addEventListener('click', () => reset(f.key));
  return h(
    'div',
    { class: 'field', 'data-key': f.key },
    h('label', { for: input.id }, f.label, ' ', h('code', {}, f.key)),
    input,
    h(
      'small',
      { class: 'sub', 'data-testid': `meta-${f.key}` },
      `${SOURCE_TEXT[source]} · ${ACCESS_TEXT[row?.access ?? 'live']}`,
      f.hint ? ` · ${f.hint}` : '',
      source === 'flag' ? ' · a command-line flag sets this and wins over a change made here' : '',
      back ? ' · ' : '',
      back,
    ),
  );
}

function historyTable(history: HistoryView): HTMLElement {
  if (history.entries.length === 0) return h('p', { class: 'sub' }, 'No run-time changes yet.');
  return tagged(
    'change-log',
    table(
      ['Revision', 'When', 'Who', 'Change (old → new)'],
      history.entries.map((e) => [
        e.revision,
        new Date(e.at).toLocaleString(),
        e.who,
        h(
          'ul',
          { class: 'changes' },
          ...e.changes.map((c) =>
            h('li', {}, h('code', {}, c.key), ` ${shortValue(c.old)} → ${shortValue(c.new)}`),
          ),
          e.note ? h('li', { class: 'sub' }, e.note) : null,
        ),
      ]),
    ),
  );
}

function savedNotice(answer: ChangeAnswer): HTMLElement {
  const parts = [
    answer.applied.length > 0 ? `Applied now: ${answer.applied.join(', ')}.` : '',
    answer.restartRequired.length > 0
      ? `Takes effect after a restart: ${answer.restartRequired.join(', ')}.`
      : '',
  ].filter(Boolean);
  return tagged(
    'settings-saved',
    notice(
      'info',
      `Saved as revision ${answer.revision}`,
      parts.join(' ') || 'Nothing differed from what runs.',
    ),
  );
}

function readonlyCard(view: ConfigView): HTMLElement {
  return card(
    'Changed only in the file',
    h(
      'p',
      { class: 'sub' },
      `A mistake here could lock you out of this page, and secrets stay off the network: change these in ${view.file}, then reload or restart the agent.`,
    ),
    tagged(
      'file-only',
      table(
        ['Key', 'Value', 'Set by', ''],
        fileOnlyRows(view.keys).map((r) => [
          h('code', {}, r.key),
          shortValue(r.value),
          SOURCE_TEXT[r.source],
          'change in the file',
        ]),
      ),
    ),
  );
}

function allKeys(view: ConfigView): HTMLElement {
  return h(
    'details',
    {},
    h('summary', {}, `Every key (${view.keys.length}), with where its value comes from`),
    table(
      ['Key', 'Value', 'Set by', 'Change'],
      view.keys.map((r) => [
        h('code', {}, r.key),
        shortValue(r.value),
        SOURCE_TEXT[r.source],
        ACCESS_TEXT[r.access],
      ]),
    ),
  );
}

/** The merge patch for what the form holds now (the fields and the MCP server list), or every problem in it. */
function formChange(
  fields: readonly FieldDef[],
  keys: readonly KeyRow[],
  inputs: ReadonlyMap<string, Input>,
  mcp: { editor: ReturnType<typeof mcpServersEditor>; row: KeyRow } | undefined,
): { patch: Record<string, unknown>; changed: string[] } | { errors: string[] } {
  const entered = new Map<string, string | boolean>(
    [...inputs].map(([k, el]) => [
      k,
      el instanceof HTMLInputElement && el.type === 'checkbox' ? el.checked : el.value,
    ]),
  );
  const built = buildPatch(fields, keys, entered);
  const servers = mcp ? serversChange(mcp.row.value, mcp.editor.rows()) : { changed: false as const };
  if ('errors' in built || 'errors' in servers)
    return {
      errors: [...('errors' in built ? built.errors : []), ...('errors' in servers ? servers.errors : [])],
    };
  if (servers.changed) {
    setPath(built.patch, MCP_KEY, servers.value);
    built.changed.push(MCP_KEY);
  }
  return built;
}

/** The assistant's MCP servers: a list edited by its own part of the form, placed in the tools' group. */
function mcpEditorIn(groups: HTMLFieldSetElement[], row: KeyRow): ReturnType<typeof mcpServersEditor> {
  const editor = mcpServersEditor(row);
  const group = groups.find((g) => g.querySelector('legend')?.textContent === TOOLS_GROUP);
  if (group) group.append(editor.element);
  else groups.push(h('fieldset', {}, h('legend', {}, TOOLS_GROUP), editor.element));
  return editor;
}

async function load(ctx: PageContext): Promise<{ view: ConfigView; history: HistoryView }> {
  const [view, history] = await Promise.all([
    ctx.api.get<ConfigView>('/api/config'),
    ctx.api.get<HistoryView>('/api/config/history?limit=50'),
  ]);
  return { view, history };
}

export const settingsPage: Page = async (ctx) => {
  const result = h('div', { 'data-testid': 'settings-result' });
  const body = h('div', { class: 'stack' });
  let current = await load(ctx);

  const send = async (patch: Record<string, unknown>, what: string) => {
    result.replaceChildren(h('p', { class: 'loading' }, 'Saving…'));
    try {
      const answer = await ctx.api.patch<ChangeAnswer>('/api/config', patch, current.view.revision);
      result.replaceChildren(savedNotice(answer));
    } catch (err) {
      result.replaceChildren(errorNotice(err as ApiError, what));
    }
    current = await load(ctx);
    render();
  };

  const render = () => {
    const { view, history } = current;
    const rows = new Map(view.keys.map((k) => [k.key, k]));
    const fields = visibleFields(view.keys);
    const inputs = new Map<string, Input>();
    const reset = (key: string) => {
      const patch: Record<string, unknown> = {};
      setPath(patch, key, null);
      void send(patch, key);
    };
    const groups = [...new Set(fields.map((f) => f.group))].map((g) =>
      h(
        'fieldset',
        {},
        h('legend', {}, g),
        ...fields
          .filter((f) => f.group === g)
          .map((f) => {
            const input = fieldInput(f, rows.get(f.key));
            inputs.set(f.key, input);
            return fieldRow(f, rows.get(f.key), input, reset);
          }),
      ),
    );
    const mcpRow = rows.get(MCP_KEY);
    const mcp = mcpRow ? mcpEditorIn(groups, mcpRow) : undefined;
    const save = h('button', { type: 'submit', 'data-testid': 'settings-save' }, 'Save');
    const form = h('form', { class: 'settings' }, ...groups, h('p', { class: 'toolbar' }, save));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const built = formChange(
        fields,
        view.keys,
        inputs,
        mcp && mcpRow ? { editor: mcp, row: mcpRow } : undefined,
      );
      if ('errors' in built) {
        result.replaceChildren(
          tagged(
            'settings-error',
            notice('error', 'Not saved', `${built.errors.join('; ')}. Nothing was changed.`),
          ),
        );
        return;
      }
      if (built.changed.length === 0) {
        result.replaceChildren(notice('info', 'Nothing to save', 'No field differs from what runs now.'));
        return;
      }
      void send(built.patch, built.changed.join(', '));
    });
    body.replaceChildren(
      ...(view.problem ? [settingsProblemNotice(view.problem)] : []),
      card(
        'Run-time settings',
        h(
          'p',
          { class: 'sub', 'data-testid': 'settings-revision' },
          `Revision ${view.revision}. Changes made here are kept in the run-time settings, which win over ${view.file}; command-line flags win over both.`,
        ),
        form,
      ),
      card('Change log', historyTable(history)),
      readonlyCard(view),
      allKeys(view),
    );
  };
  render();
  return { element: h('div', { class: 'page' }, h('h1', {}, 'Settings'), result, body) };
};
