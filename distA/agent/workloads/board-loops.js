import { errorMessage } from '../common/errors.js';
import { AplaySink, arecordSource, WavFileSink, wavFileSource, } from './audio/io.js';
import { ffmpegFrames } from './vision/frame-sources.js';
import { runVoiceLoop } from './voice/loop.js';
// The board's own microphone and camera, when the configuration names them: a voice loop from the microphone
// (ALSA or a WAV file) to the speaker, and a camera watch whose answers go out as device events. Both stop
// with the signal; each promise settles when its loop has ended.
export function startBoardVoiceLoop(vc, voice, env) {
    return (async () => {
        const session = await voice.open('board');
        const source = vc.input.source === 'alsa'
            ? arecordSource(vc.input.device, env.signal)
            : wavFileSource(vc.input.wavPath ?? '');
        const sink = vc.output.sink === 'alsa'
            ? new AplaySink(vc.output.device)
            : new WavFileSink(vc.output.wavPath ?? `${env.dataDir}/voice-reply.wav`);
        try {
            await runVoiceLoop(session, source, sink);
        }
        finally {
            await session.close();
        }
    })().catch((err) => env.logger.error('board voice loop stopped', { err: errorMessage(err) }));
}
export function startCameraWatch(vic, vision, env) {
    const camera = vic.camera;
    const runner = vision.watch(ffmpegFrames(camera, { width: vic.frameWidth, height: vic.frameHeight, fps: 1 }, env.signal, env.monotonicMs), {
        prompt: vic.watch.prompt,
        intervalS: vic.watch.intervalS,
        onSceneChange: vic.watch.onSceneChange,
    }, env.signal);
    runner.on('answer', (a) => env.publishEvent?.('vision.watch', {
        camera,
        text: a.text,
        trigger: a.trigger,
        meanAbsDiff: a.diff.meanAbsDiff,
        t: a.wallMs,
        dropped: runner.framesDropped,
        thumbnail: `data:image/png;base64,${a.thumbnail.toString('base64')}`,
    }));
    runner.on('error', (e) => env.logger.warn('camera watch', { camera, error: e.message }));
    return runner.done;
}
//# sourceMappingURL=board-loops.js.map