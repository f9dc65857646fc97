import { card, h } from '../ui/dom.js';
import type { VisionServerEvent } from '../vision/protocol.js';

// The vision page's parts: its controls, the camera preview, snapshots as JPEG, and what the vision socket
// says. vision.ts wires them to the socket.

/** A frame of the preview as a JPEG of at most 640 px a side (drawn on the snapshot canvas). */
export async function jpegOf(
  source: HTMLVideoElement | HTMLImageElement,
  canvas: HTMLCanvasElement,
): Promise<Blob> {
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

/** The vision page's controls and output areas, created once per page. */
export function visionControls(boardCamera: string | undefined) {
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

  return {
    sourceSelect,
    video,
    boardImg,
    canvas,
    cameraState,
    cameraBtn,
    snapBtn,
    question,
    askBtn,
    answer,
    watchBtn,
    timeline,
    problem,
  };
}

export type VisionControls = ReturnType<typeof visionControls>;

/** One JSON message from the vision socket, shown: the streamed answer, or a watch-mode event on the timeline
 *  (the newest 100). */
export function showVisionEvent(
  msg: VisionServerEvent,
  ui: VisionControls,
  fail: (title: string, err: unknown) => void,
): void {
  if (msg.type === 'answer-delta') ui.answer.textContent += msg.text;
  else if (msg.type === 'answer')
    ui.answer.textContent = msg.text + (msg.latencyMs ? ` (${Math.round(msg.latencyMs)} ms)` : '');
  else if (msg.type === 'watch-event') {
    ui.timeline.prepend(
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
    while (ui.timeline.children.length > 100) ui.timeline.lastElementChild!.remove();
  } else if (msg.type === 'error') fail('Vision error', new Error(msg.message));
}

/** Shows the chosen camera in the preview: the board's stream, or this browser's camera (whose stream is
 *  returned, to be stopped with the page). */
export async function startCamera(
  ui: VisionControls,
  boardCamera: string | undefined,
  fail: (title: string, err: unknown) => void,
): Promise<MediaStream | undefined> {
  let stream: MediaStream | undefined;
  if (ui.sourceSelect.value === 'board' && boardCamera) {
    ui.boardImg.src = boardCamera;
    ui.boardImg.hidden = false;
    ui.video.hidden = true;
    ui.cameraState.textContent = 'Showing the board’s camera.';
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
      return undefined;
    }
    ui.video.srcObject = stream;
    ui.video.hidden = false;
    ui.boardImg.hidden = true;
    await ui.video.play().catch(() => undefined);
    const track = stream.getVideoTracks()[0];
    ui.cameraState.textContent = `Camera on: ${track?.label ?? 'camera'} ${ui.video.videoWidth}×${ui.video.videoHeight}.`;
  }
  ui.snapBtn.disabled = false;
  ui.cameraBtn.disabled = true;
  return stream;
}

/** The page: the camera with its preview and snapshot, a question about the snapshot, watch mode's timeline. */
export function visionLayout(ui: VisionControls, blocked: HTMLElement | undefined): HTMLElement {
  const { sourceSelect, cameraBtn, snapBtn, video, boardImg, canvas, cameraState, problem } = ui;
  const { question, askBtn, answer, watchBtn, timeline } = ui;
  return h(
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
  );
}
