import { errorMessage } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { VisionConfig } from '../config/sections/vision.js';
import type { VoiceConfig } from '../config/sections/voice.js';
import type { AgentContext, PublishEvent } from '../module.js';
import {
  AplaySink,
  type AudioSink,
  type AudioSource,
  arecordSource,
  WavFileSink,
  wavFileSource,
} from './audio/io.js';
import type { BoardSpeaker } from './tools/board-speaker.js';
import { ffmpegFrames } from './vision/frame-sources.js';
import type { VisionService } from './vision/service.js';
import { runVoiceLoop } from './voice/loop.js';
import type { VoiceService } from './voice/service.js';
import { runGatedVoiceLoop } from './wake/loop.js';

// The board's own microphone and camera, when the configuration names them: a voice loop from the microphone
// (ALSA or a WAV file) to the speaker, and a camera watch whose answers go out as device events. Both stop
// with the signal; each promise settles when its loop has ended.

export function startBoardVoiceLoop(
  vc: VoiceConfig,
  voice: VoiceService,
  env: {
    dataDir: string;
    signal: AbortSignal;
    logger: Logger;
    publishEvent?: PublishEvent;
    /** Says timers and announcements through this loop's session while it runs. */
    speaker?: BoardSpeaker;
  },
): Promise<void> {
  return (async () => {
    const session = await voice.open('board');
    const detach = env.speaker?.attach(session);
    const source: AudioSource =
      vc.input.source === 'alsa'
        ? arecordSource(vc.input.device, env.signal)
        : wavFileSource(vc.input.wavPath ?? '');
    const sink: AudioSink =
      vc.output.sink === 'alsa'
        ? new AplaySink(vc.output.device)
        : new WavFileSink(vc.output.wavPath ?? `${env.dataDir}/voice-reply.wav`);
    try {
      if (vc.wake.enabled)
        await runGatedVoiceLoop(session, source, sink, {
          config: vc.wake,
          wakeStream: () => voice.wakeStream('board'),
          ...(env.publishEvent ? { publishEvent: env.publishEvent } : {}),
          onEvent: (event, payload) => {
            if (event === 'scores') return;
            const level = event === 'wake-error' ? 'warn' : 'info';
            env.logger[level](`wake gate: ${event}`, payload as Record<string, unknown>);
          },
        });
      else await runVoiceLoop(session, source, sink);
    } finally {
      detach?.();
      await session.close();
    }
  })().catch((err: unknown) => env.logger.error('board voice loop stopped', { err: errorMessage(err) }));
}

export function startCameraWatch(
  vic: VisionConfig & { camera: string },
  vision: VisionService,
  env: { signal: AbortSignal; logger: Logger; monotonicMs: () => number; publishEvent?: PublishEvent },
): Promise<void> {
  const camera = vic.camera;
  const runner = vision.watch(
    ffmpegFrames(
      camera,
      { width: vic.frameWidth, height: vic.frameHeight, fps: 1 },
      env.signal,
      env.monotonicMs,
    ),
    // The config's own object, read on every frame: a run-time settings change reaches a running watch.
    vic.watch,
    env.signal,
  );
  runner.on('answer', (a) =>
    env.publishEvent?.('vision.watch', {
      camera,
      text: a.text,
      trigger: a.trigger,
      meanAbsDiff: a.diff.meanAbsDiff,
      t: a.wallMs,
      dropped: runner.framesDropped,
      thumbnail: `data:image/png;base64,${a.thumbnail.toString('base64')}`,
    }),
  );
  runner.on('error', (e) => env.logger.warn('camera watch', { camera, error: e.message }));
  return runner.done;
}

/** The loops that run on the board itself: the microphone voice loop and the camera watch, as configured. */
export function startBoardLoops(
  ctx: AgentContext,
  config: { voice: VoiceConfig; vision: VisionConfig },
  services: { voice: VoiceService; vision: VisionService; hub: { speaker: BoardSpeaker } },
  publishEvent: PublishEvent | undefined,
  signal: AbortSignal,
): Array<Promise<void>> {
  const loops: Array<Promise<void>> = [];
  const { voice: vc, vision: vic } = config;
  const env = { signal, logger: ctx.logger, ...(publishEvent ? { publishEvent } : {}) };
  if (vc.input.source !== 'none')
    loops.push(
      startBoardVoiceLoop(vc, services.voice, {
        ...env,
        dataDir: ctx.config.dataDir,
        speaker: services.hub.speaker,
      }),
    );
  if (vic.watch.enabled && vic.camera)
    loops.push(
      startCameraWatch({ ...vic, camera: vic.camera }, services.vision, {
        ...env,
        monotonicMs: () => ctx.clock.monotonicMs(),
      }),
    );
  return loops;
}
