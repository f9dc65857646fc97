import { readChatEvents } from '../chat/stream.js';
import {
  type AnswerTurn,
  applyEvent,
  type ChatTurn,
  chatRequest,
  endOfStream,
  newAnswer,
  newConversationId,
  type UserTurn,
} from '../chat/transcript.js';
import { ApiError } from '../ui/api.js';
import { card, formatBytes, h, notice } from '../ui/dom.js';
import type { Page, PageContext } from '../ui/page.js';
import { timersCard } from './chat-timers.js';
import { answerView, pendingImagesView, userTurnView } from './chat-view.js';
import type { Limits } from './workloads.js';

// A typed conversation with the board's assistant: the LLM on voice.llm with its tools (time, timers, the
// camera, Home Assistant through MCP), over HTTP. Its own page rather than typed turns on the Voice page: the
// Voice page needs the whole speech chain (it says "Voice not available" until an ASR model is placed) and a
// socket session, while this needs only an LLM placed, so a board with nothing else still has a way to talk.
// The answer streams in as NDJSON; each tool call shows its arguments and result; an image goes to a VLM.

const CHAT_PATH = '/api/assistant/chat';

interface PendingImage {
  name: string;
  url: string;
  bytes: number;
}

function readAsDataUrl(file: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result));
    r.onerror = () => reject(r.error ?? new Error('the file could not be read'));
    r.readAsDataURL(file);
  });
}

function failure(err: unknown): string {
  if (err instanceof ApiError && err.status === 404)
    return `This agent has no typed chat (POST ${CHAT_PATH} answered 404): it needs a version with the acting assistant.`;
  return err instanceof Error ? err.message : String(err);
}

function controls() {
  const input = h('textarea', {
    id: 'chat-input',
    rows: 3,
    maxlength: 8000,
    placeholder: 'Ask the assistant… (Enter sends, Shift+Enter starts a new line)',
    'data-testid': 'chat-input',
  });
  const file = h('input', {
    id: 'chat-image',
    type: 'file',
    accept: 'image/*',
    multiple: true,
    'data-testid': 'chat-image',
  });
  return {
    input,
    file,
    send: h('button', { type: 'submit', 'data-testid': 'chat-send' }, 'Send'),
    stop: h('button', { type: 'button', disabled: true, 'data-testid': 'chat-stop' }, 'Stop'),
    reset: h('button', { type: 'button', class: 'secondary', 'data-testid': 'chat-new' }, 'New conversation'),
    images: h('p', { class: 'thumbs', 'data-testid': 'chat-images' }),
    problem: h('div', { 'data-testid': 'chat-problem' }),
    status: h('p', { class: 'sub', role: 'status', 'data-testid': 'chat-status' }, 'Ready.'),
    log: h('div', {
      class: 'conversation',
      role: 'log',
      'aria-label': 'Conversation',
      'data-testid': 'chat-log',
    }),
  };
}

/** The images chosen for the next message: added from the file picker or a paste, each with Remove. */
function imageTray(limits: Limits, ui: ReturnType<typeof controls>) {
  let pending: PendingImage[] = [];
  const draw = () =>
    ui.images.replaceChildren(
      ...pendingImagesView(pending, (i) => {
        pending = pending.filter((_, j) => j !== i);
        draw();
        ui.input.focus();
      }),
    );
  const add = async (files: readonly File[]) => {
    ui.problem.replaceChildren();
    for (const f of files) {
      if (!f.type.startsWith('image/')) {
        ui.problem.replaceChildren(
          notice('error', 'Not an image', `${f.name} is ${f.type || 'not an image'}.`),
        );
        continue;
      }
      // Base64 grows a file by a third; the whole request must fit the agent's body limit.
      const used = pending.reduce((n, p) => n + p.url.length, 0);
      if (used + (f.size * 4) / 3 > limits.maxUploadBytes * 0.9) {
        ui.problem.replaceChildren(
          notice(
            'error',
            'Image too large',
            `${f.name} (${formatBytes(f.size)}) would make the message larger than the agent takes in one request (${formatBytes(limits.maxUploadBytes)}, http.maxUploadBytes).`,
            'chat-image-error',
          ),
        );
        continue;
      }
      pending.push({ name: f.name || 'pasted image', url: await readAsDataUrl(f), bytes: f.size });
    }
    draw();
  };
  /** The images for the message being sent; the tray is empty after. */
  const take = (): string[] => {
    const urls = pending.map((p) => p.url);
    pending = [];
    draw();
    return urls;
  };
  return { add, take };
}

function chatSession(
  ctx: PageContext,
  ui: ReturnType<typeof controls>,
  tray: ReturnType<typeof imageTray>,
  onAnswer: () => void,
) {
  let turns: ChatTurn[] = [];
  let conversationId = newConversationId();
  let running: AbortController | undefined;

  const setBusy = (busy: boolean) => {
    ui.send.disabled = busy;
    ui.stop.disabled = !busy;
    ui.status.textContent = busy ? 'The assistant is answering…' : 'Ready.';
  };

  const ask = async () => {
    const text = ui.input.value.trim();
    if (text.length === 0 || running) return;
    ui.problem.replaceChildren();
    const mine: UserTurn = { role: 'user', text, images: tray.take() };
    const answer: AnswerTurn = newAnswer();
    turns.push(mine);
    const request = chatRequest(turns, conversationId);
    turns.push(answer);
    const view = answerView(answer);
    ui.log.append(userTurnView(mine), view.element);
    ui.input.value = '';
    const controller = new AbortController();
    running = controller;
    setBusy(true);
    try {
      const res = await ctx.api.stream(CHAT_PATH, request, controller.signal);
      if (!res.body) throw new Error('The agent answered without a body.');
      for await (const event of readChatEvents(res.body)) {
        applyEvent(answer, event);
        view.update();
      }
      endOfStream(answer);
    } catch (err) {
      if (controller.signal.aborted) answer.state = 'stopped';
      else applyEvent(answer, { type: 'error', message: failure(err) });
    }
    view.update();
    if (running === controller) {
      running = undefined;
      setBusy(false);
    }
    // Nothing was answered: the message goes back into the box, so it is not lost and can be sent again.
    if (answer.parts.length === 0 && answer.state !== 'done' && ui.input.value === '') ui.input.value = text;
    onAnswer();
  };

  const stop = () => running?.abort();
  const reset = () => {
    stop();
    running = undefined;
    setBusy(false);
    turns = [];
    conversationId = newConversationId();
    ui.log.replaceChildren();
    ui.problem.replaceChildren();
    ui.status.textContent = 'New conversation.';
    ui.input.focus();
  };
  return { ask, stop, reset };
}

export const chatPage: Page = async (ctx) => {
  const limits = await ctx.api.get<Limits>('/api/limits');
  const ui = controls();
  const timers = timersCard(ctx);
  const tray = imageTray(limits, ui);
  const session = chatSession(ctx, ui, tray, timers.refresh);

  const form = h(
    'form',
    { class: 'chat-form' },
    h('label', { for: 'chat-input' }, 'Message'),
    ui.input,
    h(
      'p',
      { class: 'toolbar' },
      h('label', { for: 'chat-image' }, 'Add an image (for a vision model)'),
      ui.file,
    ),
    ui.images,
    h('p', { class: 'toolbar' }, ui.send, ui.stop, ui.reset),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void session.ask();
  });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  ui.input.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files ?? [])].filter((f) => f.type.startsWith('image/'));
    if (files.length === 0) return;
    e.preventDefault();
    void tray.add(files);
  });
  ui.file.addEventListener('change', () => {
    void tray.add([...(ui.file.files ?? [])]).then(() => {
      ui.file.value = '';
    });
  });
  ui.stop.addEventListener('click', session.stop);
  ui.reset.addEventListener('click', session.reset);

  return {
    element: h(
      'div',
      { class: 'page' },
      h('h1', {}, 'Chat'),
      card(
        'Conversation',
        h(
          'p',
          { class: 'sub' },
          'Typed turns to the assistant: the model on voice.llm with its tools. Needs only a language model placed; no microphone or speech models.',
        ),
        ui.log,
        ui.problem,
        form,
        ui.status,
      ),
      timers.element,
    ),
    dispose() {
      session.stop();
      timers.dispose();
    },
  };
};
