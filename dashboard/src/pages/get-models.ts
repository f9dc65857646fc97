import type {
  HubListing,
  HubRecommendations,
  HubSourceView,
  PullJobView,
} from '../../../agent/dashboard-api/wire.js';
import type { Api } from '../ui/api.js';
import { card, h, notice, tagged } from '../ui/dom.js';
import type { PageContext } from '../ui/page.js';
import {
  hubControls,
  messageOf,
  pullRow,
  recommendationsView,
  searchResults,
  sourcesText,
} from './get-models-view.js';

export { formatEta } from './get-models-view.js';

// "Get models": search Hugging Face or ModelScope for MNN exports, the exports ranked for this board per role
// with the reasons, and pulls with a live progress bar (bytes, rate, ETA) and a cancel. The agent pushes every
// pull's progress over a WebSocket; the list survives the Models page's periodic refresh because this card
// is built once and kept.

type Source = 'hf' | 'ms';

const TRUST_NOTE =
  'Hub models carry no signature: a pull is unsigned and trusted on first use (its commit and file hashes are recorded). Signed OTA packages remain the way to roll models out to a fleet.';

/** Which hubs the agent asks, or why it could not say. */
async function showSources(api: Api, note: HTMLElement): Promise<void> {
  try {
    const res = await api.get<{ sources: HubSourceView[] }>('/api/hub/sources');
    note.textContent = sourcesText(res.sources);
  } catch (err) {
    note.textContent = messageOf(err);
  }
}

type PullsMessage = { type: 'pulls'; pulls: PullJobView[] } | { type: 'pull'; pull: PullJobView };

/** The agent's pull progress over a WebSocket, reconnecting after the agent restarts until closed. */
function livePulls(api: Api, onMessage: (msg: PullsMessage) => void): { close(): void } {
  let closed = false;
  let ws: WebSocket | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const connect = () => {
    if (closed) return;
    ws = new WebSocket(api.wsUrl('/api/hub/pulls/live'));
    ws.addEventListener('message', (event) => onMessage(JSON.parse(String(event.data)) as PullsMessage));
    ws.addEventListener('close', () => {
      if (!closed) retry = setTimeout(connect, 3000);
    });
  };
  connect();
  return {
    close() {
      closed = true;
      clearTimeout(retry);
      ws?.close();
    },
  };
}

export function getModelsCard(
  ctx: PageContext,
  onInstalled: () => void,
): { element: HTMLElement; dispose(): void } {
  const api: Api = ctx.api;
  const pulls = new Map<string, PullJobView>();
  const { status, pullsBox, results, recommended, sourceSelect, words, form, sourcesNote } = hubControls();

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

  const cancelPull = async (p: PullJobView) => {
    try {
      const res = await api.send<{ pull: PullJobView }>('DELETE', `/api/hub/pulls/${p.id}`);
      pulls.set(res.pull.id, res.pull);
      renderPulls();
    } catch (err) {
      status.textContent = messageOf(err);
    }
  };
  const renderPulls = () => {
    const rows = [...pulls.values()].sort((a, b) => Number(b.id.slice(1)) - Number(a.id.slice(1)));
    pullsBox.replaceChildren(
      ...(rows.length > 0 ? [h('h3', {}, 'Pulls')] : []),
      ...rows.map((p) => pullRow(p, cancelPull)),
    );
  };

  const search = async () => {
    status.textContent = '';
    results.replaceChildren(h('p', { class: 'sub' }, 'Searching…'));
    const q = new URLSearchParams({ source: source(), q: words.value.trim() });
    try {
      const res = await api.get<{ owner: string; listings: HubListing[] }>(`/api/hub/search?${q}`);
      results.replaceChildren(searchResults(res, words.value.trim(), pullButton));
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
      recommended.replaceChildren(...recommendationsView(res, pullButton));
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

  // Live pull progress; re-reads the installed lists on an install.
  const live = livePulls(api, (msg) => {
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

  void showSources(api, sourcesNote);
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
      live.close();
    },
  };
}
