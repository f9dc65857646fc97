import { formatBytes, notice } from '../ui/dom.js';
import type { Page, PageContext } from '../ui/page.js';
import { parseVisionEvent, type VisionClientMessage } from '../vision/protocol.js';
import { describeClose } from '../voice/protocol.js';
import {
  jpegOf,
  showVisionEvent,
  startCamera,
  type VisionControls,
  visionControls,
  visionLayout,
} from './vision-view.js';
import { type Limits, unavailableNotice, type WorkloadsResponse } from './workloads.js';

// Show the device something: the browser's camera (or the board's own camera stream), a snapshot and a
// question, or watch mode, which sends a frame every few seconds and lists what the model says over time.
// The camera preview and snapshots work even when the engine cannot answer, so the camera can be checked.

/** The vision socket, opened on first use and again after it closed; an image over the agent's message limit is
 *  refused here, with the limit in words. */
function visionSocket(
  ctx: PageContext,
  vision: WorkloadsResponse['vision'],
  limits: Limits,
  ui: VisionControls,
  fail: (title: string, err: unknown) => void,
  onClose: () => void,
) {
  let ws: WebSocket | undefined;
  const connect = (): Promise<WebSocket> => {
    if (ws && ws.readyState === WebSocket.OPEN) return Promise.resolve(ws);
    if (!vision.available) return Promise.reject(new Error('Vision is not available on this agent'));
    const socket = new WebSocket(ctx.api.wsUrl(vision.path));
    ws = socket;
    socket.addEventListener('message', (event) => {
      const msg = parseVisionEvent(String(event.data));
      if (msg) showVisionEvent(msg, ui, fail);
    });
    socket.addEventListener('close', (event) => {
      if (ws === socket) ws = undefined;
      onClose();
      if (event.code !== 1000)
        ui.problem.replaceChildren(
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

  const send = (m: VisionClientMessage) => {
    if (ws?.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
  };
  return { connect, sendImage, send, close: (code: number, reason: string) => ws?.close(code, reason) };
}

export const visionPage: Page = async (ctx) => {
  const [workloads, limits] = await Promise.all([
    ctx.api.get<WorkloadsResponse>('/api/workloads'),
    ctx.api.get<Limits>('/api/limits'),
  ]);
  const blocked = unavailableNotice('Vision', workloads, workloads.vision);
  const boardCamera = workloads.vision.cameraStreamPath;

  const ui = visionControls(boardCamera);
  const {
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
    problem,
  } = ui;

  let stream: MediaStream | undefined;
  let snapshot: Blob | undefined;
  let watchTimer: ReturnType<typeof setInterval> | undefined;

  const frameSource = () => (sourceSelect.value === 'board' ? boardImg : video);
  const fail = (title: string, err: unknown) =>
    problem.replaceChildren(
      notice('error', title, err instanceof Error ? err.message : String(err), 'vision-error'),
    );

  const socket = visionSocket(ctx, workloads.vision, limits, ui, fail, () => stopWatching());
  const { connect, sendImage } = socket;

  const stopWatching = () => {
    if (watchTimer !== undefined) clearInterval(watchTimer);
    watchTimer = undefined;
    watchBtn.textContent = 'Start watching';
    socket.send({ type: 'unwatch' });
  };

  cameraBtn.addEventListener('click', async () => {
    problem.replaceChildren();
    stream = (await startCamera(ui, boardCamera, fail)) ?? stream;
  });
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
    element: visionLayout(ui, blocked),
    dispose() {
      stopWatching();
      socket.close(1000, 'page closed');
      for (const t of stream?.getTracks() ?? []) t.stop();
    },
  };
};
