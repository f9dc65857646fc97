import type { AnswerTurn, UserTurn } from '../chat/transcript.js';
import { formatBytes, h, notice } from '../ui/dom.js';
import { toolCallView } from '../ui/tool-call.js';

// The Chat page's parts that only show things: a turn the person wrote, an answer that redraws itself as its
// events arrive (text grows in place, a tool call's details keep their open state when the result comes in),
// and the images waiting to be sent. chat.ts wires them to the form and the stream.

export function userTurnView(turn: UserTurn): HTMLElement {
  return h(
    'div',
    { class: 'turn user', 'data-testid': 'chat-user' },
    h('p', { class: 'you' }, turn.text),
    turn.images.length > 0
      ? h(
          'p',
          { class: 'thumbs' },
          ...turn.images.map((src, i) => h('img', { src, alt: `Image ${i + 1} sent with this message` })),
        )
      : null,
  );
}

function usageLine(turn: AnswerTurn): string {
  const u = turn.usage ?? {};
  const tokens =
    u['promptTokens'] !== undefined || u['completionTokens'] !== undefined
      ? ` · ${u['promptTokens'] ?? '?'} prompt + ${u['completionTokens'] ?? '?'} answer tokens`
      : '';
  return `Finished: ${turn.finishReason ?? 'stop'}${tokens}`;
}

/** An answer's element and the function that brings it up to date with its turn. */
export function answerView(turn: AnswerTurn): { element: HTMLElement; update(): void } {
  const body = h('div', {});
  const footer = h('div', {});
  const element = h('div', { class: 'turn answer', 'data-testid': 'chat-answer' }, body, footer);
  const shown: Array<{ el: HTMLElement; key: string }> = [];
  const update = () => {
    element.dataset['state'] = turn.state;
    element.setAttribute('aria-busy', String(turn.state === 'streaming'));
    turn.parts.forEach((part, i) => {
      const key = part.kind === 'text' ? 'text' : `tool:${part.result ? 'result' : 'call'}`;
      const old = shown[i];
      if (part.kind === 'text') {
        if (old?.key === 'text') old.el.textContent = part.text;
        else shown[i] = { el: h('p', { class: 'reply', 'data-testid': 'chat-text' }, part.text), key };
      } else if (old?.key !== key) {
        const el = toolCallView(part);
        if (old?.el instanceof HTMLDetailsElement) el.open = old.el.open;
        shown[i] = { el, key };
      }
      if (shown[i]!.el !== old?.el) {
        if (old) old.el.replaceWith(shown[i]!.el);
        else body.append(shown[i]!.el);
      }
    });
    footer.replaceChildren(
      turn.state === 'error'
        ? notice('error', 'The assistant could not answer', turn.error ?? 'Unknown error', 'chat-error')
        : turn.state === 'stopped'
          ? h('p', { class: 'sub' }, 'Stopped.')
          : turn.state === 'done'
            ? h('p', { class: 'sub', 'data-testid': 'chat-done' }, usageLine(turn))
            : h('p', { class: 'sub' }, 'Answering…'),
    );
  };
  update();
  return { element, update };
}

/** The images chosen for the next message, each with a button that takes it out again. */
export function pendingImagesView(
  images: ReadonlyArray<{ name: string; url: string; bytes: number }>,
  remove: (i: number) => void,
): HTMLElement[] {
  return images.map((img, i) => {
    const btn = h(
      'button',
      { type: 'button', class: 'link', 'aria-label': `Remove image ${img.name}` },
      'remove',
    );
    btn.addEventListener('click', () => remove(i));
    return h(
      'span',
      { class: 'pending-image', 'data-testid': 'chat-pending-image' },
      h('img', { src: img.url, alt: img.name }),
      ` ${img.name} (${formatBytes(img.bytes)}) `,
      btn,
    );
  });
}
