// The voice session socket (protocol in docs/WORKLOADS.md). Client → agent: binary frames of PCM (16 kHz mono
// s16le unless `start` declared another format) and JSON control messages; agent → client: JSON events, and
// each chunk of reply audio as an `audio` event followed by one binary frame of s16le at its sample rate.
import { randomUUID } from 'node:crypto';
import { errorMessage } from '../../common/errors.js';
import { MessageRateLimiter, WS_CLOSE } from '../../http/session-limits.js';
import { floatToS16le, PcmToPipeline, PIPELINE_FORMAT, PIPELINE_RATE } from '../audio/pcm.js';
import { WorkloadError } from '../shared/errors.js';
export const VOICE_WS_PATH = '/ws/voice';
function parseClientMessage(text) {
    let v;
    try {
        v = JSON.parse(text);
    }
    catch {
        throw new WorkloadError('ESTATE', 'Control messages must be JSON objects with a "type"');
    }
    const type = typeof v === 'object' && v !== null ? v.type : undefined;
    const m = v;
    switch (type) {
        case 'start':
            if (m['mode'] !== undefined && m['mode'] !== 'vad' && m['mode'] !== 'push-to-talk') {
                throw new WorkloadError('ESTATE', `start.mode must be "vad" or "push-to-talk", got ${JSON.stringify(m['mode'])}`);
            }
            if (m['duplex'] !== undefined && m['duplex'] !== 'half' && m['duplex'] !== 'full') {
                throw new WorkloadError('ESTATE', `start.duplex must be "half" or "full", got ${JSON.stringify(m['duplex'])}`);
            }
            return m;
        case 'ptt':
            if (typeof m['pressed'] !== 'boolean')
                throw new WorkloadError('ESTATE', 'ptt.pressed must be a boolean');
            return m;
        case 'playback-done':
        case 'reset':
        case 'stop':
            return m;
        default:
            throw new WorkloadError('ESTATE', `Unknown message type ${JSON.stringify(type)} (expected start, ptt, playback-done, reset, stop)`);
    }
}
function toBuffer(data) {
    return Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
}
export function registerVoiceSocket(deps) {
    return deps.router.upgrade(VOICE_WS_PATH, (ws) => attachVoiceSocket(ws, deps));
}
export function attachVoiceSocket(ws, deps) {
    const release = deps.sessions.tryAcquire();
    if (!release) {
        ws.close(WS_CLOSE.tooManySessions, deps.sessions.refusal().slice(0, 120));
        return;
    }
    const log = deps.logger.child('voice-ws');
    const rate = new MessageRateLimiter(deps.clock, deps.messagesPerSecond, deps.messagesPerSecond * 2);
    const id = randomUUID();
    let session;
    let converter;
    let chain = Promise.resolve();
    let closed = false;
    const offs = [];
    const send = (event) => {
        if (ws.readyState === ws.OPEN)
            ws.send(JSON.stringify(event));
    };
    const fail = (err) => {
        const code = err.code;
        send({ type: 'error', ...(typeof code === 'string' ? { code } : {}), message: errorMessage(err) });
    };
    const forward = (s, type, map) => {
        offs.push(s.on(type, (e) => send({ type, ...(map ? map(e) : e) })));
    };
    const start = async (m) => {
        if (session)
            throw new WorkloadError('ESTATE', 'The session has already started');
        converter = new PcmToPipeline(m.format === undefined ? PIPELINE_FORMAT : m.format);
        const opened = await deps.open(id, {
            ...(m.mode ? { mode: m.mode } : {}),
            ...(m.duplex ? { duplex: m.duplex } : {}),
        });
        if (closed) {
            await opened.close();
            return;
        }
        session = opened;
        forward(session, 'speech-start');
        forward(session, 'speech-end');
        forward(session, 'speech-discarded');
        forward(session, 'transcript');
        forward(session, 'reply-delta');
        forward(session, 'barge-in');
        forward(session, 'turn-end');
        offs.push(session.on('audio', (e) => {
            if (ws.readyState !== ws.OPEN)
                return;
            ws.send(JSON.stringify({ type: 'audio', turn: e.turn, seq: e.seq, sampleRate: e.sampleRate }));
            ws.send(floatToS16le(e.samples));
        }));
        send({
            type: 'ready',
            id,
            mode: m.mode ?? 'vad',
            sampleRate: PIPELINE_RATE,
            stages: deps.describeStages(),
        });
    };
    const handle = async (data, isBinary) => {
        if (isBinary) {
            if (!session || !converter)
                throw new WorkloadError('ESTATE', 'Send {"type":"start"} before audio');
            const samples = converter.push(toBuffer(data));
            if (samples.length > 0)
                session.pushAudio(samples);
            return;
        }
        const m = parseClientMessage(toBuffer(data).toString('utf8'));
        if (m.type === 'start') {
            try {
                await start(m);
            }
            catch (err) {
                // Without a session (no engine, no model, bad format) the socket has nothing to do: say why and close.
                fail(err);
                ws.close(1011, Buffer.from(errorMessage(err)).subarray(0, 120).toString());
            }
            return;
        }
        if (!session)
            throw new WorkloadError('ESTATE', `Send {"type":"start"} before ${m.type}`);
        if (m.type === 'ptt') {
            if (m.pressed)
                session.pushToTalkStart();
            else
                session.pushToTalkEnd();
        }
        else if (m.type === 'playback-done')
            session.playbackDone();
        else if (m.type === 'reset')
            session.resetHistory();
        else if (m.type === 'stop')
            ws.close(1000, 'stopped');
    };
    ws.on('message', (data, isBinary) => {
        if (!rate.take()) {
            ws.close(WS_CLOSE.rateLimited, rate.describe().slice(0, 120));
            return;
        }
        // In order: audio must reach the session in the order it was spoken, and after `start` has opened it.
        chain = chain.then(() => handle(data, isBinary)).catch(fail);
    });
    ws.on('close', () => {
        closed = true;
        void chain.finally(async () => {
            for (const off of offs)
                off();
            try {
                await session?.close();
            }
            catch (err) {
                log.warn('voice session did not close cleanly', { err });
            }
            finally {
                release();
            }
        });
    });
}
//# sourceMappingURL=socket.js.map