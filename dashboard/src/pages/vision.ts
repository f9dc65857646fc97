import { card, formatBytes, h, notice } from '../dom.js';
import type { Page } from '../page.js';
import { parseVisionEvent, type VisionClientMessage } from '../vision/protocol.js';
import { describeClose } from '../voice/protocol.js';
import { type Limits, unavailableNotice, type WorkloadsResponse } from './workloads.js';

// Show the device something: the browser's camera (or the board's own camera stream), a snapshot and a
// question, or watch mode, which sends a frame every few seconds and lists what the model says over time.
// The camera preview and snapshots work even when the engine cannot answer, so the camera can be checked.

async function jpegOf(source: HTMLVideoElement | HTMLImageElement, canvas: HTMLCanvasElement): Promise<Blob> {
  const w = source instanceof HTMLVideoElement ? source.videoWidth : source.naturalWidth;
  const hgt = source instanceof HTMLVideoElement ? source.videoHeight : source.naturalHeight;
  if (!w || !hgt) throw new Error('The camera has not delivered a frame yet');
  const scale = Math.min(1, 640 / Math.max(w, hgt));
  canvas.width = Math.round(w * scale);
  canvas.height = Math.round(hgt * scale);
  canvas.getContext('2d')!.drawImage(source, 0, 0, canvas.width, canvas.height);
  return new Promise((resolve, reject) =>
    canvas.toBlob(
      (b) => (b ? resolve(b) : reject(new Error('Could not encode the snapshot'))),
      'image/jpeg',
      0.85,
    ),
  );
}

export const visionPage: Page = async (ctx) => {
  const [workloads, limits] = await Promise.all([
    ctx.api.get<WorkloadsResponse>('/api/workloads'),
    ctx.api.get<Limits>('/api/limits'),
  ]);
  const blocked = unavailableNotice('Vision', workloads, workloads.vision);
  const boardCamera = workloads.vision.cameraStreamPath;

  const sourceSelect = h(
    'select',
    { 'aria-label': 'Camera', 'data-testid': 'camera-source' },
    h('option', { value: 'browser' }, 'This browser’s camera'),
    boardCamera ? h('option', { value: 'board' }, 'The board’s camera') : null,
  );
  const video = h('video', {
    autoplay: true,
    muted: true,
    playsinline: true,
    class: 'preview',
    'data-testid': 'camera-preview',
  });
  const boardImg = h('img', { class: 'preview', alt: 'Board camera', hidden: true });
  const canvas = h('canvas', { class: 'snapshot', 'data-testid': 'snapshot' });
  const cameraState = h('p', { class: 'sub', 'data-testid': 'camera-state' }, 'Camera off.');
  const cameraBtn = h('button', { type: 'button', 'data-testid': 'camera-start' }, 'Start camera');
  const snapBtn = h('button', { type: 'button', disabled: true, 'data-testid': 'snapshot-take' }, 'Snapshot');
  const question = h('input', {
    type: 'text',
    placeholder: 'Ask about the snapshot…',
    'aria-label': 'Question',
    value: 'What do you see?',
  });
  const askBtn = h('button', { type: 'button', disabled: true, 'data-testid': 'ask' }, 'Ask');
  const answer = h('p', { class: 'reply', 'data-testid': 'answer' });
  const watchBtn = h('button', { type: 'button', disabled: true, 'data-testid': 'watch' }, 'Start watching');
  const timeline = h('ol', { class: 'timeline', 'data-testid': 'timeline' });
  const problem = h('div', {});

  let stream: MediaStream | undefined;
  let ws: WebSocket | undefined;
  let snapshot: Blob | undefined;
  let watchTimer: ReturnType<typeof setInterval> | undefined;

  const frameSource = () => (sourceSelect.value === 'board' ? boardImg : video);
  const fail = (title: string, err: unknown) =>
    problem.replaceChildren(
      notice('error', title, err instanceof Error ? err.message : String(err), 'vision-error'),
    );

  const startCamera = async () => {
    problem.replaceChildren();
    if (sourceSelect.value === 'board' && boardCamera) {
      boardImg.src = boardCamera;
      boardImg.hidden = false;
      video.hidden = true;
      cameraState.textContent = 'Showing the board’s camera.';
    } else {
      try {
        stream = await navigator.mediaDevices.getUserMedia({
          video: { width: { ideal: 640 }, height: { ideal: 480 } },
        });
      } catch (err) {
        fail(
          'Camera not available',
          new Error(
            `The browser refused the camera: ${(err as Error).message}. Allow it for this page (browsers only allow it on https:// or localhost).`,
          ),
        );
        return;
      }
      video.srcObject = stream;
      video.hidden = false;
      boardImg.hidden = true;
      await video.play().catch(() => undefined);
      const track = stream.getVideoTracks()[0];
      cameraState.textContent = `Camera on: ${track?.label ?? 'camera'} ${video.videoWidth}×${video.videoHeight}.`;
    }
    snapBtn.disabled = false;
    cameraBtn.disabled = true;
  };

  const connect = (): Promise<WebSocket> => {
    if (ws && ws.readyState === WebSocket.OPEN) return Promise.resolve(ws);
    if (!workloads.vision.available)
      return Promise.reject(new Error('Vision is not available on this agent'));
    const socket = new WebSocket(ctx.api.wsUrl(workloads.vision.path));
    ws = socket;
    socket.addEventListener('message', (event) => {
      const msg = parseVisionEvent(String(event.data));
      if (!msg) return;
      if (msg.type === 'answer-delta') answer.textContent += msg.text;
      else if (msg.type === 'answer')
        answer.textContent = msg.text + (msg.latencyMs ? ` (${Math.round(msg.latencyMs)} ms)` : '');
      else if (msg.type === 'watch-event') {
        timeline.prepend(
          h(
            'li',
            { class: msg.changed ? 'changed' : undefined },
            // Only our own agent's PNG data URLs are shown; anything else is dropped rather than fetched.
            msg.thumbnail?.startsWith('data:image/png;base64,')
              ? h('img', { src: msg.thumbnail, alt: '', class: 'thumb' })
              : null,
            h('time', {}, new Date(msg.t).toLocaleTimeString()),
            msg.trigger ? h('small', {}, `${msg.trigger} · `) : null,
            msg.text,
            msg.latencyMs ? h('small', {}, ` (${Math.round(msg.latencyMs)} ms)`) : null,
          ),
        );
        while (timeline.children.length > 100) timeline.lastElementChild!.remove();
      } else if (msg.type === 'error') fail('Vision error', new Error(msg.message));
    });
    socket.addEventListener('close', (event) => {
      if (ws === socket) ws = undefined;
      stopWatching();
      if (event.code !== 1000)
        problem.replaceChildren(
          notice('warn', 'Vision session ended', describeClose(event.code, event.reason), 'vision-closed'),
        );
    });
    return new Promise((resolve, reject) => {
      socket.addEventListener('open', () => resolve(socket), { once: true });
      socket.addEventListener('error', () => reject(new Error('Could not open the vision session')), {
        once: true,
      });
    });
  };

  const sendImage = async (header: VisionClientMessage, jpeg: Blob) => {
    // Checked here so the person gets the limit in words instead of a closed socket.
    if (jpeg.size > limits.maxWsMessageBytes) {
      throw new Error(
        `The snapshot is ${formatBytes(jpeg.size)}, over the agent's message limit of ${formatBytes(limits.maxWsMessageBytes)} (http.maxWsMessageBytes)`,
      );
    }
    const socket = await connect();
    socket.send(JSON.stringify(header));
    socket.send(await jpeg.arrayBuffer());
  };

  const stopWatching = () => {
    if (watchTimer !== undefined) clearInterval(watchTimer);
    watchTimer = undefined;
    watchBtn.textContent = 'Start watching';
    if (ws?.readyState === WebSocket.OPEN)
      ws.send(JSON.stringify({ type: 'unwatch' } satisfies VisionClientMessage));
  };

  cameraBtn.addEventListener('click', () => void startCamera());
  snapBtn.addEventListener('click', async () => {
    try {
      snapshot = await jpegOf(frameSource(), canvas);
      cameraState.textContent = `Snapshot ${canvas.width}×${canvas.height}, ${formatBytes(snapshot.size)}.`;
      askBtn.disabled = !workloads.vision.available;
      watchBtn.disabled = !workloads.vision.available;
    } catch (err) {
      fail('Snapshot failed', err);
    }
  });
  askBtn.addEventListener('click', async () => {
    if (!snapshot) return;
    answer.textContent = '';
    try {
      await sendImage(
        { type: 'ask', question: question.value, mime: 'image/jpeg', bytes: snapshot.size },
        snapshot,
      );
    } catch (err) {
      fail('Question not sent', err);
    }
  });
  watchBtn.addEventListener('click', async () => {
    if (watchTimer !== undefined) return stopWatching();
    try {
      const socket = await connect();
      socket.send(
        JSON.stringify({
          type: 'watch',
          prompt: question.value,
          intervalMs: 3000,
        } satisfies VisionClientMessage),
      );
      watchBtn.textContent = 'Stop watching';
      watchTimer = setInterval(async () => {
        try {
          const jpeg = await jpegOf(frameSource(), canvas);
          await sendImage({ type: 'frame', mime: 'image/jpeg', bytes: jpeg.size }, jpeg);
        } catch (err) {
          stopWatching();
          fail('Watch mode stopped', err);
        }
      }, 3000);
    } catch (err) {
      fail('Watch mode not started', err);
    }
  });

  return {
    element: h(
      'div',
      { class: 'page' },
      h('h1', {}, 'Vision'),
      blocked ?? null,
      card(
        'Camera',
        h('p', { class: 'toolbar' }, sourceSelect, cameraBtn, snapBtn),
        h('div', { class: 'camera' }, video, boardImg, canvas),
        cameraState,
        problem,
      ),
      card('Question', h('p', { class: 'toolbar' }, question, askBtn), answer),
      card(
        'Watch mode',
        h('p', { class: 'toolbar' }, watchBtn, h('span', { class: 'sub' }, ' a frame every 3 s')),
        timeline,
      ),
    ),
    dispose() {
      stopWatching();
      ws?.close(1000, 'page closed');
      for (const t of stream?.getTracks() ?? []) t.stop();
    },
  };
};
