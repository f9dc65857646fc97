import type { Api } from '../ui/api.js';
import { h, notice } from '../ui/dom.js';
import { type ClipLabel, tuningHints, type WakeClipList, type WakeClipView } from '../voice/wake-protocol.js';

// The wake card's detection clips (voice.wake.clips): each recent detection's 2 s of audio to listen to, marked
// as a false trigger or a correct one, and what the marks say about each keyword's threshold. The list is
// re-read when the agent says it changed (the live socket's `clips`).

const kib = (n: number) => `${Math.round(n / 1024)} KiB`;

export function clipsSection(api: Api): { element: HTMLElement; refresh(): Promise<void> } {
  const element = h('div', { 'data-testid': 'wake-clips' });
  let running: Promise<void> | undefined;
  let again = false;

  const act = async (what: () => Promise<unknown>) => {
    try {
      await what();
    } catch (err) {
      element.prepend(notice('error', 'Clip not changed', (err as Error).message, 'wake-clip-error'));
      return;
    }
    await refresh();
  };
  const row = (c: WakeClipView) => {
    // A verdict button shows whether it is the clip's label; pressing the one that is clears it.
    const mark = (label: ClipLabel, text: string, testId: string) =>
      h(
        'button',
        {
          type: 'button',
          'data-testid': `${testId}-${c.id}`,
          'aria-pressed': String(c.label === label),
          onclick: () =>
            void act(() =>
              api.send('PUT', `/api/voice/wake/clips/${c.id}`, { label: c.label === label ? null : label }),
            ),
        },
        text,
      );
    return h(
      'tr',
      { 'data-testid': `wake-clip-${c.id}`, 'data-label': c.label ?? '' },
      h('td', {}, new Date(c.t).toLocaleTimeString()),
      h('td', {}, c.keyword),
      h('td', {}, c.score.toFixed(2)),
      h('td', {}, c.source),
      h(
        'td',
        {},
        h('audio', { controls: true, preload: 'none', src: `/api/voice/wake/clips/${c.id}/audio` }),
      ),
      h(
        'td',
        { class: 'clip-verdict' },
        mark('false-trigger', 'False trigger', 'wake-clip-false'),
        mark('correct', 'Correct', 'wake-clip-correct'),
        h(
          'button',
          {
            type: 'button',
            'data-testid': `wake-clip-delete-${c.id}`,
            onclick: () => void act(() => api.send('DELETE', `/api/voice/wake/clips/${c.id}`)),
          },
          'Delete',
        ),
      ),
    );
  };
  const show = (list: WakeClipList) => {
    if (!list.enabled) {
      element.replaceChildren(h('p', { class: 'sub', 'data-testid': 'wake-clips-off' }, list.reason));
      return;
    }
    const falseTriggers = list.clips.filter((c) => c.label === 'false-trigger').length;
    element.replaceChildren(
      ...(list.lastError ? [notice('warn', 'Clip not saved', list.lastError, 'wake-clip-not-saved')] : []),
      h(
        'p',
        { class: 'sub', 'data-testid': 'wake-clips-summary' },
        `${list.clips.length} of at most ${list.maxCount} clips (${kib(list.bytes)} of ${kib(list.maxBytes)}), ${falseTriggers} marked as false triggers.`,
      ),
      ...tuningHints(list.clips).map((line) => h('p', { class: 'sub', 'data-testid': 'wake-tuning' }, line)),
      list.clips.length > 0
        ? h(
            'table',
            {},
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ...['When', 'Keyword', 'Score', 'Heard by', 'Audio', 'Verdict'].map((c) => h('th', {}, c)),
              ),
            ),
            h('tbody', {}, ...list.clips.map(row)),
          )
        : h('p', { class: 'sub' }, 'No detection saved yet.'),
    );
  };
  // One read at a time; a change meanwhile reads once more after it.
  const refresh = async (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          show(await api.get<WakeClipList>('/api/voice/wake/clips'));
        } catch (err) {
          element.replaceChildren(
            notice('warn', 'Clips not available', (err as Error).message, 'wake-clips-error'),
          );
        }
      } while (again);
    })();
    try {
      await running;
    } finally {
      running = undefined;
    }
  };
  return { element, refresh };
}
