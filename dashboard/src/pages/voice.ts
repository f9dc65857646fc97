import { card, h, notice } from '../dom.js';
import type { Page } from '../page.js';
import { ReplyPlayer } from '../voice/playback.js';
import {
  type ClientMessage,
  describeClose,
  parseServerEvent,
  type TurnMetricsView,
  type VoiceMode,
} from '../voice/protocol.js';
import { type Limits, unavailableNotice, type WorkloadsResponse } from './workloads.js';

// Talk to the device: the microphone goes through an AudioWorklet to 16 kHz PCM on the voice socket; the
// transcript, the streamed reply and its audio come back, with each turn's latencies. Push-to-talk sends
// audio only while the button (or Space) is held; hands-free streams continuously and lets the agent's VAD cut.

interface TurnView {
  row: HTMLElement;
  you: HTMLElement;
  reply: HTMLElement;
}

function ms(v: number | undefined): string {
  return v === undefined ? '—' : `${Math.round(v)} ms`;
}

export const voicePage: Page = async (ctx) => {
  const [workloads, limits] = await Promise.all([
    ctx.api.get<WorkloadsResponse>('/api/workloads'),
    ctx.api.get<Limits>('/api/limits'),
  ]);
  const blocked = unavailableNotice('Voice', workloads, workloads.voice);
  if (blocked || !workloads.voice.available) {
    return {
      element: h(
        'div',
        { class: 'page' },
        h('h1', {}, 'Voice'),
        blocked ?? notice('warn', 'Voice not available', 'Unknown reason'),
      ),
    };
  }
  const path = workloads.voice.path;

  const modeSelect = h(
    'select',
    { 'aria-label': 'Mode', 'data-testid': 'voice-mode' },
    h('option', { value: 'push-to-talk' }, 'Push to talk'),
    h('option', { value: 'vad' }, 'Hands-free'),
  );
  const startBtn = h('button', { type: 'button', 'data-testid': 'voice-start' }, 'Start');
  const pttBtn = h(
    'button',
    { type: 'button', class: 'ptt', disabled: true, 'data-testid': 'voice-ptt' },
    'Hold to talk',
  );
  const meter = h('meter', { min: 0, max: 1, value: 0, 'aria-label': 'Microphone level' });
  const sayInput = h('input', {
    type: 'text',
    maxlength: 2000,
    placeholder: 'Text for the device to say',
    'aria-label': 'Text to say',
    disabled: true,
    'data-testid': 'voice-say-text',
  });
  const sayBtn = h('button', { type: 'submit', disabled: true, 'data-testid': 'voice-say' }, 'Say');
  const sayForm = h('form', { class: 'toolbar' }, sayInput, sayBtn);
  const state = h('p', { class: 'sub', 'data-testid': 'voice-state' }, 'Not connected.');
  const problem = h('div', {});
  const conversation = h('div', { class: 'conversation', 'data-testid': 'conversation' });
  const playback = h('p', { class: 'sub', 'data-testid': 'playback' }, 'No reply audio yet.');
  const latencyBody = h('tbody', {});
  const latencies = h(
    'table',
    { 'data-testid': 'latencies' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Turn', 'Speech', 'ASR', 'First token', 'First audio', 'tok/s', 'Status'].map((t) =>
          h('th', {}, t),
        ),
      ),
    ),
    latencyBody,
  );

  let ws: WebSocket | undefined;
  let audio: AudioContext | undefined;
  let stream: MediaStream | undefined;
  let player: ReplyPlayer | undefined;
  let pressed = false;
  let replyRate = 16000;
  const turns = new Map<number, TurnView>();

  const send = (m: ClientMessage) => ws?.readyState === WebSocket.OPEN && ws.send(JSON.stringify(m));
  const turnView = (turn: number): TurnView => {
    let t = turns.get(turn);
    if (!t) {
      const you = h('p', { class: 'you' });
      const reply = h('p', { class: 'reply', 'data-testid': 'reply' });
      t = { row: h('div', { class: 'turn', 'data-turn': turn }, you, reply), you, reply };
      turns.set(turn, t);
      conversation.append(t.row);
    }
    return t;
  };
  const addLatency = (turn: number, status: string, m: TurnMetricsView) => {
    latencyBody.append(
      h(
        'tr',
        {},
        ...[
          String(turn),
          ms(m.speechMs),
          ms(m.asrMs),
          ms(m.ttftMs),
          ms(m.ttfaMs),
          m.tokensPerSec?.toFixed(1) ?? '—',
          status,
        ].map((c) => h('td', {}, c)),
      ),
    );
  };

  const stop = () => {
    pressed = false;
    send({ type: 'stop' });
    ws?.close(1000, 'stopped');
    ws = undefined;
    for (const track of stream?.getTracks() ?? []) track.stop();
    stream = undefined;
    player?.stop();
    void audio?.close();
    audio = undefined;
    startBtn.textContent = 'Start';
    pttBtn.disabled = true;
    sayInput.disabled = true;
    sayBtn.disabled = true;
    modeSelect.disabled = false;
    meter.value = 0;
  };

  const start = async () => {
    problem.replaceChildren();
    // A new session is a new conversation on the agent (turns count from 1 again), so the page starts over too.
    turns.clear();
    conversation.replaceChildren();
    latencyBody.replaceChildren();
    playback.textContent = 'No reply audio yet.';
    const mode = modeSelect.value as VoiceMode;
    try {
      stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
      });
    } catch (err) {
      problem.replaceChildren(
        notice(
          'error',
          'Microphone not available',
          `The browser refused the microphone: ${(err as Error).message}. Allow it for this page (browsers only allow it on https:// or localhost).`,
          'mic-error',
        ),
      );
      return;
    }
    // A 16 kHz context lets the browser resample; the worklet resamples itself where a browser cannot.
    try {
      audio = new AudioContext({ sampleRate: 16000, latencyHint: 'interactive' });
    } catch {
      audio = new AudioContext({ latencyHint: 'interactive' });
    }
    await audio.audioWorklet.addModule('assets/capture-worklet.js');
    const source = audio.createMediaStreamSource(stream);
    const node = new AudioWorkletNode(audio, 'pcm-capture', {
      numberOfInputs: 1,
      numberOfOutputs: 0,
      channelCount: 1,
    });
    source.connect(node);
    player = new ReplyPlayer(audio, () => send({ type: 'playback-done' }));

    const socket = new WebSocket(ctx.api.wsUrl(path));
    socket.binaryType = 'arraybuffer';
    ws = socket;
    state.textContent = 'Connecting…';
    socket.addEventListener('open', () => {
      socket.send(JSON.stringify({ type: 'start', mode } satisfies ClientMessage));
      state.textContent =
        mode === 'vad'
          ? 'Listening (hands-free): just talk.'
          : 'Connected: hold the button or Space to talk.';
      pttBtn.disabled = mode !== 'push-to-talk';
      sayInput.disabled = false;
      sayBtn.disabled = false;
    });
    node.port.onmessage = (e: MessageEvent<{ pcm: ArrayBuffer; level: number }>) => {
      meter.value = Math.min(1, e.data.level * 4);
      if (socket.readyState !== WebSocket.OPEN) return;
      if (mode === 'push-to-talk' && !pressed) return;
      // Leave audio on the floor rather than queue it without bound when the link is slower than real time.
      if (socket.bufferedAmount > limits.maxWsMessageBytes) return;
      socket.send(e.data.pcm);
    };
    socket.addEventListener('message', (event) => {
      if (event.data instanceof ArrayBuffer) {
        player?.play(event.data, replyRate);
        playback.textContent = `Played ${player!.playedSeconds.toFixed(1)} s of reply audio (${player!.chunks} chunks).`;
        return;
      }
      const msg = parseServerEvent(String(event.data));
      if (!msg) return;
      switch (msg.type) {
        case 'ready':
          if (msg.stages)
            state.textContent += ` Stages: ${Object.entries(msg.stages)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')}.`;
          break;
        case 'speech-start':
          state.textContent = 'Hearing you…';
          break;
        case 'transcript':
          turnView(msg.turn).you.textContent = msg.text;
          break;
        case 'reply-delta':
          turnView(msg.turn).reply.textContent += msg.text;
          break;
        case 'audio':
          replyRate = msg.sampleRate;
          break;
        case 'barge-in':
          player?.stop();
          break;
        case 'turn-end': {
          const t = turnView(msg.turn);
          if (msg.transcript !== undefined && !t.you.textContent) t.you.textContent = msg.transcript;
          else if (msg.transcript === undefined) t.row.classList.add('said');
          if (!t.reply.textContent) t.reply.textContent = msg.reply;
          if (msg.error) t.row.append(h('p', { class: 'form-error' }, msg.error));
          addLatency(msg.turn, msg.status, msg.metrics);
          state.textContent = mode === 'vad' ? 'Listening (hands-free).' : 'Ready: hold to talk.';
          break;
        }
        case 'error':
          problem.replaceChildren(notice('error', 'Voice error', msg.message, 'voice-error'));
          break;
        default:
          break;
      }
    });
    socket.addEventListener('close', (event) => {
      if (ws !== socket) return;
      if (event.code !== 1000)
        problem.replaceChildren(
          notice('warn', 'Voice session ended', describeClose(event.code, event.reason), 'voice-closed'),
        );
      stop();
      state.textContent = 'Not connected.';
    });
    startBtn.textContent = 'Stop';
    modeSelect.disabled = true;
  };

  sayForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = sayInput.value.trim();
    if (text.length === 0) return;
    send({ type: 'say', text });
    sayInput.value = '';
  });
  startBtn.addEventListener('click', () => {
    if (ws) stop();
    else void start();
  });
  const setPressed = (down: boolean) => {
    if (pttBtn.disabled || pressed === down) return;
    pressed = down;
    pttBtn.classList.toggle('down', down);
    send({ type: 'ptt', pressed: down });
  };
  pttBtn.addEventListener('pointerdown', () => setPressed(true));
  pttBtn.addEventListener('pointerup', () => setPressed(false));
  pttBtn.addEventListener('pointerleave', () => setPressed(false));
  const onKey = (e: KeyboardEvent) => {
    if (e.code !== 'Space' || e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement)
      return;
    e.preventDefault();
    setPressed(e.type === 'keydown');
  };
  window.addEventListener('keydown', onKey);
  window.addEventListener('keyup', onKey);

  return {
    element: h(
      'div',
      { class: 'page' },
      h('h1', {}, 'Voice'),
      card(
        'Session',
        h('p', { class: 'toolbar' }, modeSelect, startBtn, pttBtn, meter),
        sayForm,
        state,
        problem,
        playback,
      ),
      card('Conversation', conversation),
      card('Per-turn latencies', latencies),
    ),
    dispose() {
      window.removeEventListener('keydown', onKey);
      window.removeEventListener('keyup', onKey);
      stop();
    },
  };
};
