// The voice and vision session sockets on a real agent: the documented protocol over a real WebSocket, with the
// fixture models imported into the agent's model store, placed on the voice.* and vision.vlm slots and run in
// engine hosts (the error paths also without MNN: hosts that cannot start stand in for it).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import WebSocket from 'ws';
import type { AgentConfig } from '../../agent/config/schema.js';
import type { EngineHostFactory } from '../../agent/runtime/engine/engine-port.js';
import { unavailableHosts } from '../../agent/runtime/module.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { voiceSlots } from '../engine/_slots.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';
import { startWorkloadsAgent } from '../helpers/workloads-agent.js';

const noEngineReason = unavailableMessage('the engine addon is not built');

async function startAgent(t: ExecutionContext, hosts?: EngineHostFactory) {
  const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-ws-');
  const config: AgentConfig = {
    ...base,
    slots: { ...voiceSlots, 'vision.vlm': { model: 'tiny-vlm' } },
    voice: { maxNewTokens: 16 },
    vision: { maxNewTokens: 6 },
  };
  const { port, token, workloads, runtime } = await startWorkloadsAgent(t, {
    dataDir,
    config,
    models: ['silero-vad', 'tiny-omni-audio', 'tiny-llm', 'tiny-vlm'],
    hosts,
  });
  const connect = async (path: string) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    const messages: Array<Record<string, unknown> | Buffer> = [];
    ws.on('message', (data, isBinary) =>
      messages.push(isBinary ? (data as Buffer) : (JSON.parse(String(data)) as Record<string, unknown>)),
    );
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const waitFor = async (pred: (m: Record<string, unknown>) => boolean, timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = messages.find((m): m is Record<string, unknown> => !Buffer.isBuffer(m) && pred(m));
        if (found) return found;
        if (Date.now() > deadline)
          throw new Error(`timed out; got ${JSON.stringify(messages.filter((m) => !Buffer.isBuffer(m)))}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    return { ws, messages, closed, waitFor };
  };
  return { module: workloads, connect, runtime };
}

test('voice without the engine: the start is answered with the reason and the socket closes', async (t) => {
  const { connect, module } = await startAgent(t, unavailableHosts(noEngineReason));
  t.deepEqual(module.voiceStatus(), { available: false, reason: noEngineReason });
  t.deepEqual(module.visionStatus(), { available: false, reason: noEngineReason });
  const { ws, messages, closed } = await connect('/ws/voice');
  ws.send(JSON.stringify({ type: 'start', mode: 'vad' }));
  const { code } = await closed;
  t.is(code, 1011);
  t.deepEqual(messages, [
    {
      type: 'error',
      code: 'ENOENGINE',
      message: noEngineReason,
    },
  ]);
});

test('voice protocol errors are specific and keep the session', async (t) => {
  const { connect } = await startAgent(t, unavailableHosts(noEngineReason));
  const { ws, waitFor } = await connect('/ws/voice');
  ws.send(Buffer.alloc(320));
  t.is((await waitFor((m) => m['type'] === 'error'))['message'], 'Send {"type":"start"} before audio');
  ws.send('{"type":"sing"}');
  await waitFor((m) => String(m['message']).startsWith('Unknown message type'));
  ws.send('{"type":"say","text":7}');
  await waitFor((m) => m['message'] === 'say.text must be a string');
  ws.send(JSON.stringify({ type: 'start', format: { sampleRate: 4000, channels: 1, format: 's16le' } }));
  await waitFor(
    (m) => m['message'] === 'Unsupported sample rate 4000: expected an integer from 8000 to 192000 Hz',
  );
  t.pass();
});

const engine = engineAvailability();
if (!engine.available) {
  skipWithLine(`SKIP voice/vision socket answers: ${unavailableMessage(engine.reason)}`);
} else {
  test('voice over the socket: 48 kHz stereo in, events and reply audio out in protocol order', async (t) => {
    const { connect, module, runtime } = await startAgent(t);
    t.deepEqual(module.voiceStatus(), { available: true, path: '/ws/voice' });
    t.deepEqual(module.visionStatus(), { available: true, path: '/ws/vision' });
    const vadRequests = () =>
      runtime()
        ?.slotStats()
        .find((s) => s.slot === 'voice.vad')?.requests ?? 0;
    const { ws, messages, waitFor } = await connect('/ws/voice');
    ws.send(
      JSON.stringify({
        type: 'start',
        mode: 'vad',
        duplex: 'full',
        format: { sampleRate: 48000, channels: 2, format: 's16le' },
      }),
    );
    const ready = await waitFor((m) => m['type'] === 'ready');
    t.is(ready['sampleRate'], 16000);
    const wav = readFileSync(join(mediaFixturesDir, 'speech-hello-48k-stereo.wav'));
    const pcm = wav.subarray(44);
    const silence = Buffer.alloc(48000 * 4); // 1 s of stereo s16le
    const audio = Buffer.concat([silence, pcm, silence]);
    for (let at = 0; at < audio.length; at += 3840) ws.send(audio.subarray(at, at + 3840)); // 20 ms chunks
    const end = await waitFor((m) => m['type'] === 'turn-end');
    t.is(end['status'], 'completed', JSON.stringify(end));
    const events = messages.map((m) => (Buffer.isBuffer(m) ? 'binary' : String(m['type'])));
    const order = ['speech-start', 'speech-end', 'transcript', 'reply-delta', 'audio', 'turn-end'];
    t.deepEqual(
      order.map((e) => events.indexOf(e)),
      [...order.map((e) => events.indexOf(e))].sort((a, b) => a - b),
      events.join(' '),
    );
    // Every audio event is followed by exactly one binary frame of s16le at the announced rate.
    events.forEach((e, i) => {
      if (e === 'audio') t.is(events[i + 1], 'binary');
      if (e === 'binary') t.is(events[i - 1], 'audio');
    });
    const pcmBytes = messages.filter(Buffer.isBuffer).reduce((n, b) => n + b.length, 0);
    const rate = (
      messages.find((m) => !Buffer.isBuffer(m) && m['type'] === 'audio') as Record<string, number>
    )['sampleRate']!;
    t.true(pcmBytes / 2 / rate > 0.3, `reply audio ${(pcmBytes / 2 / rate).toFixed(2)} s`);
    const metrics = end['metrics'] as Record<string, number>;
    t.true(metrics['speechMs']! > 1500 && metrics['speechMs']! < 3000, `speech ${metrics['speechMs']} ms`);
    t.is(typeof metrics['ttfaMs'], 'number');
    // Silero in its engine host heard the speech: one forward per 32 ms frame.
    t.true(vadRequests() > 50, `voice.vad forwards: ${vadRequests()}`);
    // `say`: the same TTS stage speaks given text as a turn of its own.
    const before = messages.length;
    ws.send(JSON.stringify({ type: 'say', text: 'Testing the speaker.' }));
    const said = await waitFor((m) => m['type'] === 'turn-end' && m['turn'] === 2);
    t.is(said['status'], 'completed', JSON.stringify(said));
    t.is(said['reply'], 'Testing the speaker.');
    const sayEvents = messages.slice(before).map((m) => (Buffer.isBuffer(m) ? 'binary' : String(m['type'])));
    t.is(sayEvents[0], 'audio', sayEvents.join(' '));
    t.false(sayEvents.includes('transcript') || sayEvents.includes('reply-delta'), sayEvents.join(' '));
    ws.send(JSON.stringify({ type: 'say', text: 'x'.repeat(2001) }));
    await waitFor((m) => m['code'] === 'ETOOLARGE');
    ws.close();
  });

  test('vision over the socket: ask with a PNG streams an answer; a non-image is refused', async (t) => {
    const { connect } = await startAgent(t);
    const { ws, messages, waitFor } = await connect('/ws/vision');
    await waitFor((m) => m['type'] === 'ready');
    const png = readFileSync(join(mediaFixturesDir, 'camera-seq', 'frame-000.png'));
    ws.send(
      JSON.stringify({ type: 'ask', question: 'What do you see?', mime: 'image/png', bytes: png.length }),
    );
    ws.send(png);
    const answer = await waitFor((m) => m['type'] === 'answer');
    const deltas = messages
      .filter((m) => !Buffer.isBuffer(m) && m['type'] === 'answer-delta')
      .map((m) => (m as Record<string, string>)['text']);
    t.true(deltas.length > 0);
    t.is(deltas.join(''), String(answer['text']));
    const junk = Buffer.from('this is not an image at all');
    ws.send(JSON.stringify({ type: 'ask', question: 'And this?', mime: 'image/jpeg', bytes: junk.length }));
    ws.send(junk);
    const err = await waitFor((m) => m['type'] === 'error');
    t.is(err['message'], 'Frame is not an image: expected PNG, JPEG, BMP, WebP or GIF data');
    ws.send(JSON.stringify({ type: 'ask', question: 'Big?', mime: 'image/jpeg', bytes: 50 * 1024 * 1024 }));
    await waitFor(
      (m) => m['message'] === 'Image of 52428800 bytes exceeds 8388608 bytes (vision.maxFrameBytes)',
    );
    // Watch mode with pushed frames: the first frame is always described, with a thumbnail.
    ws.send(JSON.stringify({ type: 'watch', prompt: 'Hello', intervalMs: 60_000 }));
    ws.send(JSON.stringify({ type: 'frame', mime: 'image/png', bytes: png.length }));
    ws.send(png);
    const watched = await waitFor((m) => m['type'] === 'watch-event');
    t.is(watched['trigger'], 'first');
    t.regex(String(watched['thumbnail']), /^data:image\/png;base64,/);
    ws.close();
  });
}
