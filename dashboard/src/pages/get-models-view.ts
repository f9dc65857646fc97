import type {
  HubListing,
  HubRecommendations,
  HubSourceView,
  PullJobView,
} from '../../../agent/dashboard-api/wire.js';
import { ApiError } from '../ui/api.js';
import { formatBytes, h, notice, pill, table, tagged } from '../ui/dom.js';

// The "Get models" card's parts that only show things: its controls, a pull's row with progress, a search
// listing's row, the recommendations per role and the hub sources. get-models.ts wires them to the agent.

/** What h() takes as a child. */
type Child = Node | string | null;

export type PullButton = (what: string, label?: string) => HTMLElement;

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

export function messageOf(err: unknown): string {
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

/** The card's controls and output areas, created once. */
export function hubControls() {
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
  return { status, pullsBox, results, recommended, sourceSelect, words, searchBtn, form, sourcesNote };
}

/** One pull: its source, state and trust, a progress bar with bytes, rate and ETA, a cancel while it runs, and
 *  its outcome. */
export function pullRow(p: PullJobView, onCancel: (p: PullJobView) => void): HTMLElement {
  const active = p.state === 'running' || p.state === 'cancelling';
  const cancel = h(
    'button',
    { type: 'button', 'data-testid': 'pull-cancel', disabled: p.state !== 'running' },
    p.state === 'cancelling' ? 'Cancelling…' : 'Cancel',
  );
  cancel.addEventListener('click', () => onCancel(p));
  return h(
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
}

export const listingRow = (l: HubListing, pullButton: PullButton): Child[] => [
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

/** The hub's exports ranked for this board, per role, with the reasons and a pull button for those that fit. */
export function recommendationsView(res: HubRecommendations, pullButton: PullButton): HTMLElement[] {
  const roles = [...new Set(res.recommendations.map((r) => r.role))];
  return [
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
  ];
}

/** Which hubs the agent asks, as whom, and whether a token is set. */
export function sourcesText(sources: HubSourceView[]): string {
  return sources
    .map(
      (s) =>
        `${s.source === 'hf' ? 'Hugging Face' : 'ModelScope'}: ${s.endpoint}, ${s.owner}'s exports` +
        (s.hasToken
          ? ` (token from ${s.tokenVariable})`
          : ` (no token: set ${s.tokenVariable} for gated models)`),
    )
    .join(' · ');
}

/** A search's listings as a table, or a notice that nothing matched. */
export function searchResults(
  res: { owner: string; listings: HubListing[] },
  words: string,
  pullButton: PullButton,
): HTMLElement {
  if (res.listings.length === 0)
    return notice('info', 'Nothing found', `No models by ${res.owner} match “${words}”.`, 'hub-empty');
  return table(
    ['Model', 'Size', 'Task', 'Quant', 'Note', ''],
    res.listings.map((l) => listingRow(l, pullButton)),
  );
}
