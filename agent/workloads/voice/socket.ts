// The voice session socket (protocol in docs/WORKLOADS.md). Client → agent: binary frames of PCM (16 kHz mono
// s16le unless `start` declared another format) and JSON control messages; agent → client: JSON events, and
// each chunk of reply audio as an `audio` event followed by one binary frame of s16le at its sample rate.
import { randomUUID } from 'node:crypto';
import type { RawData, WebSocket } from 'ws';
import type { Clock } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import { INPUT_LIMITS } from '../../../lib/input-limits.js';
import type { Logger } from '../../../lib/log.js';
import type { HttpRouter } from '../../http/router.js';
import { MessageRateLimiter, type SessionLimiter, WS_CLOSE } from '../../http/session-limits.js';
import { floatToS16le, PcmToPipeline, PIPELINE_FORMAT, PIPELINE_RATE } from '../audio/pcm.js';
import { WorkloadError } from '../shared/errors.js';
import type { SessionOverrides } from './service.js';
import type { VoiceEvents, VoiceSession } from './session.js';

export const VOICE_WS_PATH = '/ws/voice';

export interface VoiceSocketDeps {
  router: HttpRouter;
  open(id: string, overrides: SessionOverrides): Promise<VoiceSession>;
  describeStages(): Record<string, string>;
  sessions: SessionLimiter;
  messagesPerSecond: number;
  clock: Clock;
  logger: Logger;
}

type ClientMessage =
  | { type: 'start'; mode?: 'vad' | 'push-to-talk'; duplex?: 'half' | 'full'; format?: unknown }
  | { type: 'ptt'; pressed: boolean }
  | { type: 'playback-done' }
  | { type: 'reset' }
  | { type: 'say'; text: string }
  | { type: 'stop' };

function parseClientMessage(text: string): ClientMessage {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new WorkloadError('ESTATE', 'Control messages must be JSON objects with a "type"');
  }
  const type = typeof v === 'object' && v !== null ? (v as { type?: unknown }).type : undefined;
  const m = v as Record<string, unknown>;
  switch (type) {
    case 'start':
      if (m['mode'] !== undefined && m['mode'] !== 'vad' && m['mode'] !== 'push-to-talk') {
        throw new WorkloadError(
          'ESTATE',
          `start.mode must be "vad" or "push-to-talk", got ${JSON.stringify(m['mode'])}`,
        );
      }
      if (m['duplex'] !== undefined && m['duplex'] !== 'half' && m['duplex'] !== 'full') {
        throw new WorkloadError(
          'ESTATE',
          `start.duplex must be "half" or "full", got ${JSON.stringify(m['duplex'])}`,
        );
      }
      return m as ClientMessage;
    case 'ptt':
      if (typeof m['pressed'] !== 'boolean')
        throw new WorkloadError('ESTATE', 'ptt.pressed must be a boolean');
      return m as ClientMessage;
    case 'say':
      if (typeof m['text'] !== 'string') throw new WorkloadError('ESTATE', 'say.text must be a string');
      if (m['text'].length > INPUT_LIMITS.speechTextMaxChars)
        throw new WorkloadError(
          'ETOOLARGE',
          `say.text has ${m['text'].length} characters, over the limit of ${INPUT_LIMITS.speechTextMaxChars}`,
        );
      return m as ClientMessage;
    case 'playback-done':
    case 'reset':
    case 'stop':
      return m as ClientMessage;
    default:
      throw new WorkloadError(
        'ESTATE',
        `Unknown message type ${JSON.stringify(type)} (expected start, ptt, playback-done, reset, say, stop)`,
      );
  }
}

function toBuffer(data: RawData): Buffer {
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
}

export function registerVoiceSocket(deps: VoiceSocketDeps): () => void {
  return deps.router.upgrade(VOICE_WS_PATH, (ws, up) =>
    attachVoiceSocket(ws, deps, up.req.socket.remoteAddress),
  );
}

/**
 * The session's events to the client as they happen: each as a JSON message of its type, and reply audio as a
 * JSON header followed by its samples as a binary s16le frame. Returns the unsubscribers.
 */
function relaySessionEvents(
  session: VoiceSession,
  ws: WebSocket,
  send: (event: Record<string, unknown>) => void,
): Array<() => void> {
  const offs: Array<() => void> = [];
  const forward = <K extends keyof VoiceEvents & string>(
    type: K,
    map?: (e: VoiceEvents[K]) => Record<string, unknown>,
  ) => {
    offs.push(session.on(type, (e) => send({ type, ...(map ? map(e) : (e as Record<string, unknown>)) })));
  };
  forward('speech-start');
  forward('speech-end');
  forward('speech-discarded');
  forward('transcript');
  forward('reply-delta');
  forward('tool-call');
  forward('tool-result');
  forward('barge-in');
  forward('turn-end');
  offs.push(
    session.on('audio', (e) => {
      if (ws.readyState !== ws.OPEN) return;
      ws.send(JSON.stringify({ type: 'audio', turn: e.turn, seq: e.seq, sampleRate: e.sampleRate }));
      ws.send(floatToS16le(e.samples));
    }),
  );
  return offs;
}

export function attachVoiceSocket(ws: WebSocket, deps: VoiceSocketDeps, remote?: string): void {
  const release = deps.sessions.tryAcquire({ kind: 'dashboard voice', who: remote ?? 'unknown' });
  if (!release) {
    ws.close(WS_CLOSE.tooManySessions, deps.sessions.refusal().slice(0, 120));
    return;
  }
  const log = deps.logger.child('voice-ws');
  const rate = new MessageRateLimiter(deps.clock, deps.messagesPerSecond, deps.messagesPerSecond * 2);
  const id = randomUUID();
  let session: VoiceSession | undefined;
  let converter: PcmToPipeline | undefined;
  let chain: Promise<void> = Promise.resolve();
  let closed = false;
  const offs: Array<() => void> = [];

  const send = (event: Record<string, unknown>) => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(event));
  };
  const fail = (err: unknown) => {
    const code = (err as { code?: unknown }).code;
    send({ type: 'error', ...(typeof code === 'string' ? { code } : {}), message: errorMessage(err) });
  };

  const start = async (m: Extract<ClientMessage, { type: 'start' }>) => {
    if (session) throw new WorkloadError('ESTATE', 'The session has already started');
    converter = new PcmToPipeline(
      m.format === undefined ? PIPELINE_FORMAT : (m.format as typeof PIPELINE_FORMAT),
    );
    const opened = await deps.open(id, {
      ...(m.mode ? { mode: m.mode } : {}),
      ...(m.duplex ? { duplex: m.duplex } : {}),
    });
    if (closed) {
      await opened.close();
      return;
    }
    session = opened;
    offs.push(...relaySessionEvents(session, ws, send));
    send({
      type: 'ready',
      id,
      mode: m.mode ?? 'vad',
      sampleRate: PIPELINE_RATE,
      stages: deps.describeStages(),
    });
  };

  const handle = async (data: RawData, isBinary: boolean) => {
    if (isBinary) {
      if (!session || !converter) throw new WorkloadError('ESTATE', 'Send {"type":"start"} before audio');
      const samples = converter.push(toBuffer(data));
      if (samples.length > 0) session.pushAudio(samples);
      return;
    }
    const m = parseClientMessage(toBuffer(data).toString('utf8'));
    if (m.type === 'start') {
      try {
        await start(m);
      } catch (err) {
        // Without a session (no engine, no model, bad format) the socket has nothing to do: say why and close.
        fail(err);
        ws.close(1011, Buffer.from(errorMessage(err)).subarray(0, 120).toString());
      }
      return;
    }
    if (!session) throw new WorkloadError('ESTATE', `Send {"type":"start"} before ${m.type}`);
    if (m.type === 'ptt') {
      if (m.pressed) session.pushToTalkStart();
      else session.pushToTalkEnd();
    } else if (m.type === 'playback-done') session.playbackDone();
    else if (m.type === 'reset') session.resetHistory();
    else if (m.type === 'say') session.say(m.text);
    else if (m.type === 'stop') ws.close(1000, 'stopped');
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
      for (const off of offs) off();
      try {
        await session?.close();
      } catch (err) {
        log.warn('voice session did not close cleanly', { err });
      } finally {
        release();
      }
    });
  });
}
