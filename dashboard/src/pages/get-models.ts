import type { HubSourceView } from '../../../agent/dashboard/ports.js';
import type { HubListing, HubRecommendations } from '../../../agent/models/hub-catalog.js';
import type { PullJobView } from '../../../models/hub/pull-jobs.js';
import { type Api, ApiError } from '../api.js';
import { card, formatBytes, h, notice, pill, table, tagged } from '../dom.js';
import type { PageContext } from '../page.js';

// "Get models": search Hugging Face or ModelScope for MNN exports, the exports ranked for this board per role
// with the reasons, and pulls with a live progress bar (bytes, rate, ETA) and a cancel. The agent pushes every
// pull's progress over a WebSocket; the list survives the Models page's periodic refresh because this card
// is built once and kept.

type Source = 'hf' | 'ms';

const TRUST_NOTE =
  'Hub models carry no signature: a pull is unsigned and trusted on first use (its commit and file hashes are recorded). Signed OTA packages remain the way to roll models out to a fleet.';

const STATE_KIND: Record<PullJobView['state'], 'ok' | 'warn' | 'bad' | 'muted'> = {
  running: 'muted',
  cancelling: 'warn',
  installed: 'ok',
  unchanged: 'ok',
  failed: 'bad',
  cancelled: 'warn',
};

export function formatEta(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '--';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function messageOf(err: unknown): string {
  return err instanceof ApiError ? err.message : String(err);
}

function progressText(p: PullJobView): string {
  if (p.phase === 'listing') return 'listing the repository…';
  if (p.phase === 'installing') return 'verifying and installing…';
  const parts = [`${formatBytes(p.doneBytes)} / ${formatBytes(p.totalBytes)}`];
  if (p.state === 'running') {
    parts.push(p.bytesPerSecond !== undefined ? `${formatBytes(p.bytesPerSecond)}/s` : '-- /s');
    parts.push(`ETA ${formatEta(p.etaSeconds)}`);
  }
  if (p.file !== undefined && p.state === 'running') parts.push(`${p.file} (${p.fileIndex}/${p.fileCount})`);
  return parts.join(' · ');
}

function outcomeText(p: PullJobView): HTMLElement | null {
  if (p.state === 'installed' || p.state === 'unchanged')
    return h(
      'p',
      { class: 'sub', 'data-testid': 'pull-outcome' },
      p.state === 'installed'
        ? `Installed ${p.model} from ${p.repo}@${(p.commit ?? '').slice(0, 12)} (${formatBytes(p.fetchedBytes ?? 0)} downloaded) — unsigned (trust on first use)`
        : `${p.model} is already ${p.repo}@${(p.commit ?? '').slice(0, 12)}: nothing to download`,
    );
  if (p.error)
    return h(
      'div',
      { class: p.state === 'cancelled' ? 'sub' : 'form-error', 'data-testid': 'pull-error' },
      h('p', {}, p.error.message),
      p.error.hint ? h('p', { 'data-testid': 'pull-hint' }, p.error.hint) : null,
    );
  return null;
}

export function getModelsCard(
  ctx: PageContext,
  onInstalled: () => void,
): { element: HTMLElement; dispose(): void } {
  const api: Api = ctx.api;
  const pulls = new Map<string, PullJobView>();
  const status = h('p', { class: 'form-error', role: 'alert', 'data-testid': 'hub-error' });
  const pullsBox = tagged('hub-pulls', h('div', { class: 'installs' }));
  const results = tagged('hub-results', h('div', {}));
  const recommended = tagged('hub-recommended', h('div', {}));
  const sourceSelect = h(
    'select',
    { 'aria-label': 'Model hub', 'data-testid': 'hub-source' },
    h('option', { value: 'hf' }, 'Hugging Face'),
    h('option', { value: 'ms' }, 'ModelScope'),
  );
  const words = h('input', {
    type: 'search',
    placeholder: 'words, e.g. qwen 0.5b',
    'aria-label': 'Search words',
    'data-testid': 'hub-words',
    maxlength: 200,
  });
  const searchBtn = h('button', { type: 'submit', 'data-testid': 'hub-search' }, 'Search');
  const form = h('form', { class: 'toolbar' }, sourceSelect, words, searchBtn);
  const sourcesNote = h('p', { class: 'sub', 'data-testid': 'hub-sources' });
  let disposed = false;

  const source = (): Source => (sourceSelect.value === 'ms' ? 'ms' : 'hf');

  const pull = async (what: string) => {
    status.textContent = '';
    try {
      const res = await api.send<{ pull: PullJobView }>('POST', '/api/hub/pulls', { source: what });
      pulls.set(res.pull.id, res.pull);
      renderPulls();
    } catch (err) {
      status.textContent = messageOf(err);
    }
  };
  const pullButton = (what: string, label = 'Pull') => {
    const b = h('button', { type: 'button', 'data-testid': 'pull', 'data-source': what }, label);
    b.addEventListener('click', () => void pull(what));
    return b;
  };

  const renderPulls = () => {
    const rows = [...pulls.values()].sort((a, b) => Number(b.id.slice(1)) - Number(a.id.slice(1)));
    pullsBox.replaceChildren(
      ...(rows.length > 0 ? [h('h3', {}, 'Pulls')] : []),
      ...rows.map((p) => {
        const active = p.state === 'running' || p.state === 'cancelling';
        const cancel = h(
          'button',
          { type: 'button', 'data-testid': 'pull-cancel', disabled: p.state !== 'running' },
          p.state === 'cancelling' ? 'Cancelling…' : 'Cancel',
        );
        cancel.addEventListener('click', async () => {
          try {
            const res = await api.send<{ pull: PullJobView }>('DELETE', `/api/hub/pulls/${p.id}`);
            pulls.set(res.pull.id, res.pull);
            renderPulls();
          } catch (err) {
            status.textContent = messageOf(err);
          }
        });
        const row = h(
          'div',
          { class: 'install pull', 'data-testid': 'pull-row', 'data-pull': p.id, 'data-state': p.state },
          h(
            'span',
            {},
            h('code', {}, p.source),
            ' ',
            pill(p.state, STATE_KIND[p.state]),
            ' ',
            pill('unsigned', 'warn'),
          ),
          h('progress', { max: Math.max(1, p.totalBytes), value: p.doneBytes, 'data-testid': 'pull-bar' }),
          h('small', { 'data-testid': 'pull-progress' }, progressText(p)),
          active ? cancel : null,
          outcomeText(p),
        );
        return row;
      }),
    );
  };

  const listingRow = (l: HubListing) => [
    h('code', {}, l.source),
    l.sizeBytes !== undefined ? formatBytes(l.sizeBytes) : '—',
    l.task !== undefined ? `${l.task} (${l.kind})` : '—',
    l.quant ?? '—',
    l.problem !== undefined
      ? h('span', { class: 'form-error' }, l.problem)
      : l.builtFor !== undefined && l.builtFor !== 'cpu'
        ? `built for ${l.builtFor}`
        : '',
    l.problem !== undefined
      ? '—'
      : l.installed !== undefined
        ? h('span', {}, `installed as ${l.installed} `, pullButton(l.source, 'Update'))
        : pullButton(l.source),
  ];

  const search = async () => {
    status.textContent = '';
    results.replaceChildren(h('p', { class: 'sub' }, 'Searching…'));
    const q = new URLSearchParams({ source: source(), q: words.value.trim() });
    try {
      const res = await api.get<{ owner: string; listings: HubListing[] }>(`/api/hub/search?${q}`);
      results.replaceChildren(
        res.listings.length === 0
          ? notice(
              'info',
              'Nothing found',
              `No models by ${res.owner} match “${words.value.trim()}”.`,
              'hub-empty',
            )
          : table(['Model', 'Size', 'Task', 'Quant', 'Note', ''], res.listings.map(listingRow)),
      );
    } catch (err) {
      results.replaceChildren(notice('error', 'Search failed', messageOf(err), 'hub-search-failed'));
    }
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void search();
  });

  const recommend = async () => {
    recommended.replaceChildren(h('p', { class: 'sub' }, 'Ranking the hub’s models for this board…'));
    try {
      const res = await api.get<HubRecommendations>(`/api/hub/recommend?source=${source()}`);
      const roles = [...new Set(res.recommendations.map((r) => r.role))];
      recommended.replaceChildren(
        h('p', { class: 'sub' }, `Board ${res.board}: ${res.budget}`),
        ...(roles.length === 0
          ? [notice('info', 'Nothing to recommend', 'The hub has no LLM, VLM, omni or ASR exports to rank.')]
          : []),
        ...roles.map((role) =>
          h(
            'div',
            { 'data-testid': 'rec-role', 'data-role': role },
            h('h4', {}, role),
            h(
              'ul',
              { class: 'recs' },
              ...res.recommendations
                .filter((r) => r.role === role)
                .map((r, i) =>
                  h(
                    'li',
                    { 'data-testid': 'rec', 'data-source': r.source },
                    r.fits ? pill(i === 0 ? 'best fit' : 'fits', 'ok') : pill('does not fit', 'bad'),
                    ' ',
                    h('code', {}, r.source),
                    r.fits ? ` ${formatBytes(r.memoryBytes)}` : '',
                    r.backend ? ` on ${r.backend}` : '',
                    r.decodeTokPerSec !== undefined ? `, ~${r.decodeTokPerSec.toFixed(1)} tok/s` : '',
                    ' ',
                    r.fits ? pullButton(r.source) : null,
                    h(
                      'ul',
                      { class: 'why' },
                      ...r.reasons.map((why) => h('li', { 'data-testid': 'rec-reason' }, why)),
                    ),
                  ),
                ),
            ),
          ),
        ),
      );
    } catch (err) {
      recommended.replaceChildren(
        notice('warn', 'No recommendations', messageOf(err), 'hub-recommend-failed'),
      );
    }
  };
  sourceSelect.addEventListener('change', () => {
    results.replaceChildren();
    void recommend();
  });

  // Live pull progress; reconnects after the agent restarts, and re-reads the installed list on an install.
  let ws: WebSocket | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const connect = () => {
    if (disposed) return;
    ws = new WebSocket(api.wsUrl('/api/hub/pulls/live'));
    ws.addEventListener('message', (event) => {
      const msg = JSON.parse(String(event.data)) as
        | { type: 'pulls'; pulls: PullJobView[] }
        | { type: 'pull'; pull: PullJobView };
      if (msg.type === 'pulls') {
        pulls.clear();
        for (const p of msg.pulls) pulls.set(p.id, p);
      } else if (msg.type === 'pull') {
        const before = pulls.get(msg.pull.id)?.state;
        pulls.set(msg.pull.id, msg.pull);
        if (msg.pull.state === 'installed' && before !== 'installed') {
          onInstalled();
          // The lists say what is installed already: read them again.
          if (results.querySelector('table')) void search();
          void recommend();
        }
      }
      renderPulls();
    });
    ws.addEventListener('close', () => {
      if (!disposed) retry = setTimeout(connect, 3000);
    });
  };
  connect();

  void api
    .get<{ sources: HubSourceView[] }>('/api/hub/sources')
    .then((res) => {
      sourcesNote.textContent = res.sources
        .map(
          (s) =>
            `${s.source === 'hf' ? 'Hugging Face' : 'ModelScope'}: ${s.endpoint}, ${s.owner}'s exports` +
            (s.hasToken
              ? ` (token from ${s.tokenVariable})`
              : ` (no token: set ${s.tokenVariable} for gated models)`),
        )
        .join(' · ');
    })
    .catch((err: unknown) => {
      sourcesNote.textContent = messageOf(err);
    });
  void recommend();

  return {
    element: tagged(
      'get-models',
      card(
        'Get models',
        h('p', { class: 'sub', 'data-testid': 'hub-trust' }, TRUST_NOTE),
        sourcesNote,
        form,
        status,
        results,
        h('h3', {}, 'Recommended for this board'),
        recommended,
        pullsBox,
      ),
    ),
    dispose() {
      disposed = true;
      clearTimeout(retry);
      ws?.close();
    },
  };
}
