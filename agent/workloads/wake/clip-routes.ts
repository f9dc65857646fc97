// The detection clips on the dashboard: the list (or why there is none), each clip's audio, a person's label
// (`false-trigger`, `correct`, or none) and removal. Clips are recordings of the room: every route is
// authenticated like the rest of the API, and nothing is kept unless voice.wake.clips.enabled is set.
import { HttpError } from '../../../lib/http-error.js';
import type { HttpRouter } from '../../http/router.js';
import { CLIP_LABELS, type ClipLabel, type WakeClipStore } from './clips.js';

const OFF =
  'Saving detection clips is off: set voice.wake.clips.enabled (at most voice.wake.clips.maxCount clips and maxBytes of audio are kept) and restart';

export function registerClipRoutes(router: HttpRouter, clips: WakeClipStore | undefined): Array<() => void> {
  const store = (): WakeClipStore => {
    if (!clips) throw new HttpError(409, 'clips_off', OFF);
    return clips;
  };
  return [
    router.route('GET', '/api/voice/wake/clips', (ctx) => {
      if (!clips) return ctx.json(200, { enabled: false, reason: OFF, clips: [] });
      const list = clips.list();
      ctx.json(200, {
        enabled: true,
        ...clips.limits,
        bytes: list.reduce((n, c) => n + c.bytes, 0),
        ...(clips.lastError ? { lastError: clips.lastError } : {}),
        clips: list,
      });
    }),
    router.route('GET', '/api/voice/wake/clips/:id/audio', (ctx) => {
      const wav = store().wav(ctx.params['id'] ?? '');
      ctx.res.writeHead(200, {
        'Content-Type': 'audio/wav',
        'Content-Length': String(wav.length),
        'Cache-Control': 'no-store',
      });
      ctx.res.end(wav);
    }),
    router.route('PUT', '/api/voice/wake/clips/:id', async (ctx) => {
      const body = await ctx.readJson();
      const label = (body as { label?: unknown } | null)?.label;
      if (label !== null && !CLIP_LABELS.includes(label as ClipLabel))
        throw new HttpError(
          400,
          'invalid_request',
          `Expected {"label": ${CLIP_LABELS.map((l) => `"${l}"`).join(' | ')} | null}, got ${JSON.stringify(body)}`,
        );
      ctx.json(200, store().mark(ctx.params['id'] ?? '', label as ClipLabel | null));
    }),
    router.route('DELETE', '/api/voice/wake/clips/:id', (ctx) => {
      store().remove(ctx.params['id'] ?? '');
      ctx.json(200, { removed: ctx.params['id'] });
    }),
  ];
}
