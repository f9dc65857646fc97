import { card, h, notice } from '../ui/dom.js';
import type { Page, PageContext } from '../ui/page.js';
import { ReplyPlayer } from '../voice/playback.js';
import {
  type ClientMessage,
  describeClose,
  parseServerEvent,
  type ServerEvent,
  type VoiceMode,
} from '../voice/protocol.js';
import {
  type ConversationView,
  conversationView,
  liveSessions,
  toolCallsView,
  type VoiceControls,
  voiceControls,
} from './voice-view.js';
import { wakeCard } from './voice-wake.js';
import { type Limits, unavailableNotice, type WorkloadsResponse } from './workloads.js';

// Talk to the device: the microphone goes through an AudioWorklet to 16 kHz PCM on the voice socket; the
// transcript, the streamed reply and its audio come back, with each turn's latencies. Push-to-talk sends
// audio only while the button (or Space) is held; hands-free streams continuously and lets the agent's VAD cut.

interface EventContext {
  ui: VoiceControls;
  view: ConversationView;
  mode: VoiceMode;
  player: () => ReplyPlayer | undefined;
  setReplyRate: (rate: number) => void;
}

/** One JSON message from the voice socket, shown. */
function showServerEvent(msg: ServerEvent, c: EventContext): void {
  switch (msg.type) {
    case 'ready':
      if (msg.stages)
        c.ui.state.textContent += ` Stages: ${Object.entries(msg.stages)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}.`;
      break;
    case 'speech-start':
      c.ui.state.textContent = 'Hearing you…';
      break;
    case 'transcript':
      c.view.turnView(msg.turn).you.textContent = msg.text;
      break;
    case 'reply-delta':
      c.view.turnView(msg.turn).reply.textContent += msg.text;
      break;
    case 'audio':
      c.setReplyRate(msg.sampleRate);
      break;
    case 'barge-in':
      c.player()?.stop();
      break;
    case 'turn-end': {
      const t = c.view.turnView(msg.turn);
      if (msg.transcript !== undefined && !t.you.textContent) t.you.textContent = msg.transcript;
      else if (msg.transcript === undefined) t.row.classList.add('said');
      if (!t.reply.textContent) t.reply.textContent = msg.reply;
      const tools = toolCallsView(msg.toolCalls ?? []);
      if (tools) t.row.append(tools);
      if (msg.error) t.row.append(h('p', { class: 'form-error' }, msg.error));
      c.view.addLatency(msg.turn, msg.status, msg.metrics);
      c.ui.state.textContent = c.mode === 'vad' ? 'Listening (hands-free).' : 'Ready: hold to talk.';
      break;
    }
    case 'error':
      c.ui.problem.replaceChildren(notice('error', 'Voice error', msg.message, 'voice-error'));
      break;
    default:
      break;
  }
}

/** This browser's microphone with its speech processing on; undefined (and the reason shown) when refused. */
async function openMicrophone(problem: HTMLElement): Promise<MediaStream | undefined> {
  try {
    return await navigator.mediaDevices.getUserMedia({
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
    return undefined;
  }
}

/** A 16 kHz context lets the browser resample; the worklet resamples itself where a browser cannot. */
function newCaptureContext(): AudioContext {
  try {
    return new AudioContext({ sampleRate: 16000, latencyHint: 'interactive' });
  } catch {
    return new AudioContext({ latencyHint: 'interactive' });
  }
}

/** The capture worklet on the microphone: it posts 16 kHz PCM chunks with their level. */
async function captureNode(audio: AudioContext, stream: MediaStream): Promise<AudioWorkletNode> {
  await audio.audioWorklet.addModule('assets/capture-worklet.js');
  const source = audio.createMediaStreamSource(stream);
  const node = new AudioWorkletNode(audio, 'pcm-capture', {
    numberOfInputs: 1,
    numberOfOutputs: 0,
    channelCount: 1,
  });
  source.connect(node);
  return node;
}

/** One voice session at a time on the page: the microphone, the socket, the reply player; start() and stop(). */
function voiceSession(
  ctx: PageContext,
  path: string,
  limits: Limits,
  ui: VoiceControls,
  view: ConversationView,
) {
  const { modeSelect, startBtn, pttBtn, meter, sayInput, sayBtn, state, problem, playback } = ui;

  let ws: WebSocket | undefined;
  let audio: AudioContext | undefined;
  let stream: MediaStream | undefined;
  let player: ReplyPlayer | undefined;
  let pressed = false;
  let replyRate = 16000;

  const send = (m: ClientMessage) => ws?.readyState === WebSocket.OPEN && ws.send(JSON.stringify(m));
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
    view.clear();
    playback.textContent = 'No reply audio yet.';
    const mode = modeSelect.value as VoiceMode;
    stream = await openMicrophone(problem);
    if (!stream) return;
    audio = newCaptureContext();
    const node = await captureNode(audio, stream);
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
      if (msg)
        showServerEvent(msg, {
          ui,
          view,
          mode,
          player: () => player,
          setReplyRate: (rate) => {
            replyRate = rate;
          },
        });
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

  const setPressed = (down: boolean) => {
    if (pttBtn.disabled || pressed === down) return;
    pressed = down;
    pttBtn.classList.toggle('down', down);
    send({ type: 'ptt', pressed: down });
  };
  return { start, stop, send, setPressed, active: () => ws !== undefined };
}

export const voicePage: Page = async (ctx) => {
  const [workloads, limits] = await Promise.all([
    ctx.api.get<WorkloadsResponse>('/api/workloads'),
    ctx.api.get<Limits>('/api/limits'),
  ]);
  const blocked = unavailableNotice('Voice', workloads, workloads.voice);
  if (blocked || !workloads.voice.available) {
    // The wake word needs only the engine and its own model: Wyoming satellites use it without ASR or an LLM.
    const wake = workloads.engine.available ? await wakeCard(ctx) : undefined;
    return {
      element: h(
        'div',
        { class: 'page' },
        h('h1', {}, 'Voice'),
        blocked ?? notice('warn', 'Voice not available', 'Unknown reason'),
        wake?.element,
      ),
      dispose: () => wake?.dispose(),
    };
  }
  const wake = await wakeCard(ctx);
  const ui = voiceControls();
  const { modeSelect, startBtn, pttBtn, meter, sayInput, sayForm, state, problem, playback } = ui;
  const session = voiceSession(ctx, workloads.voice.path, limits, ui, conversationView(ui));

  sayForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = sayInput.value.trim();
    if (text.length === 0) return;
    session.send({ type: 'say', text });
    sayInput.value = '';
  });
  startBtn.addEventListener('click', () => {
    if (session.active()) session.stop();
    else void session.start();
  });
  const setPressed = session.setPressed;
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
      wake.element,
      card('Conversation', ui.conversation),
      card('Per-turn latencies', ui.latencies),
      liveSessions(limits),
    ),
    dispose() {
      window.removeEventListener('keydown', onKey);
      window.removeEventListener('keyup', onKey);
      session.stop();
      wake.dispose();
    },
  };
};
