// The board's own voice loop does a whole tool round on real MNN, from speech: the dashboard's voice socket (what a
// user of the board talks to first) is fed a real speech WAV, Silero finds the utterance, tiny-omni-audio on
// voice.asr transcribes it, the scripted tool-call model on voice.llm (engine/tools/tool-model: HassTurnOn
// {"name": "kitchen light"} when the latest turn is the user's, "The kitchen light is on." after the result) calls
// the Home Assistant-like MCP home that voice.tools.mcp points at, the light switches, espeak-ng speaks the answer,
// and the turn's record (the socket's turn-end, as the Voice page shows it, and the row in the agent's database)
// holds the call with its arguments and its result.
//
// The fixture ASR is a tiny random model: its transcript is not English, but it is text, which is all the script
// needs (the tool model calls the tool whatever the user said).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import WebSocket from 'ws';
import type { AgentConfig } from '../../agent/config/schema.js';
import { STORE_FILE } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { findExecutable } from '../../agent/workloads/voice/executable.js';
import { VoiceTurnStore } from '../../agent/workloads/voice/turn-store.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { type McpHome, startMcpHome } from '../helpers/mcp-home.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { toolModel } from '../helpers/tool-model.js';
import { until } from '../helpers/until.js';
import { startWorkloadsAgent } from '../helpers/workloads-agent.js';

const found = await toolModel();
const espeak = findExecutable('espeak-ng');
const skip =
  found.skip ??
  (espeak === undefined ? 'espeak-ng is not installed (the spoken answer needs it)' : undefined);
if (skip) console.log(`voice-tool-round: skipped, ${skip}`);
const gate = skip === undefined ? test.serial : test.skip;

type Message = Record<string, unknown> | Buffer;

async function startAgent(t: ExecutionContext, home: McpHome) {
  const model = found.model!;
  const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-voice-tools-');
  const config: AgentConfig = {
    ...base,
    slots: {
      'voice.vad': { model: 'silero-vad' },
      'voice.asr': { model: 'tiny-omni-audio' },
      'voice.llm': { model: 'tool-model' },
    },
    voice: {
      maxNewTokens: 64,
      tools: { mcp: [{ name: 'home', url: home.url, token: home.token }] },
    },
  };
  const { agent, port, token, workloads } = await startWorkloadsAgent(t, {
    dataDir,
    config,
    models: ['silero-vad', 'tiny-omni-audio', { path: model.dir, id: 'tool-model' }],
  });
  // The MCP client connects in the background: its tools join the built-in ones once listed.
  await until(
    async () => (await workloads.assistant()!.assistant.catalog()).entries.has('HassTurnOn'),
    'the home server tools to be listed',
    { timeoutMs: 60_000, stepMs: 200 },
  );
  // The test stops the agent to read the turn's row; agent.stop is idempotent, the teardown's stop is then a no-op.
  return { port, token, workloads, dataDir, stop: () => agent.stop('test') };
}

gate(
  'voice socket: spoken "turn on the kitchen light" switches it through MCP, answers aloud and records the call',
  async (t) => {
    t.timeout(600_000);
    const home = await startMcpHome({ lights: { 'kitchen light': 'off' } });
    t.teardown(() => home.close());
    const { port, token, workloads, dataDir, stop } = await startAgent(t, home);
    t.deepEqual(workloads.voiceStatus(), { available: true, path: '/ws/voice' });

    // The dashboard's Voice page: a WebSocket with the pairing token, `start`, then microphone audio.
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/voice`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    t.teardown(() => ws.close());
    const messages: Message[] = [];
    ws.on('message', (data, isBinary) =>
      messages.push(isBinary ? (data as Buffer) : (JSON.parse(String(data)) as Record<string, unknown>)),
    );
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const events = () => messages.filter((m): m is Record<string, unknown> => !Buffer.isBuffer(m));
    const find = (type: string) => events().find((m) => m['type'] === type);
    ws.send(JSON.stringify({ type: 'start', mode: 'vad', duplex: 'full' }));
    await until(() => find('ready') !== undefined || find('error') !== undefined, 'the session to be ready');
    t.like(find('ready'), { sampleRate: 16000 }, JSON.stringify(events()));

    const wav = readFileSync(join(mediaFixturesDir, 'speech-hello-16k.wav'));
    const silence = Buffer.alloc(16000 * 2); // 1 s of mono s16le
    const audio = Buffer.concat([silence, wav.subarray(44), silence]);
    for (let at = 0; at < audio.length; at += 640) ws.send(audio.subarray(at, at + 640)); // 20 ms chunks
    await until(() => find('turn-end') !== undefined, 'the turn to end', { timeoutMs: 300_000, stepMs: 50 });
    const end = find('turn-end')!;
    t.is(end['status'], 'completed', JSON.stringify(end));

    // ASR heard something, the model called the home's tool, and the light is on.
    const transcript = find('transcript');
    t.true(String(transcript?.['text'] ?? '').length > 0, 'the ASR transcribed the speech');
    const call = find('tool-call');
    t.like(call, { turn: 1, name: 'HassTurnOn', arguments: { name: 'kitchen light' } });
    t.like(find('tool-result'), { turn: 1, id: call?.['id'], name: 'HassTurnOn', ok: true });
    t.is(home.lights.get('kitchen light'), 'on', 'the MCP server switched the light');
    t.deepEqual(home.calls, [{ tool: 'HassTurnOn', args: { name: 'kitchen light' } }]);

    // The answer after the result, in words and aloud.
    const expected = found.model!.finalText;
    t.is(String(end['reply']).trim(), expected);
    const said = events()
      .filter((m) => m['type'] === 'reply-delta')
      .map((m) => m['text'])
      .join('');
    t.false(said.includes('<tool_call>'), 'no tool markup reaches the spoken text');
    const types = messages.map((m) => (Buffer.isBuffer(m) ? 'binary' : String(m['type'])));
    const order = ['transcript', 'tool-call', 'tool-result', 'reply-delta', 'audio', 'turn-end'];
    const at = order.map((e) => types.indexOf(e));
    t.false(at.includes(-1), types.join(' '));
    t.deepEqual(
      at,
      [...at].sort((a, b) => a - b),
      types.join(' '),
    );
    const pcmBytes = messages.filter(Buffer.isBuffer).reduce((n, b) => n + b.length, 0);
    const rate = Number(find('audio')?.['sampleRate']);
    t.true(pcmBytes / 2 / rate > 0.3, `spoken answer of ${(pcmBytes / 2 / rate).toFixed(2)} s`);

    // The turn's record: the call with its arguments, outcome and result, on the socket and in the database.
    const recorded = {
      name: 'HassTurnOn',
      source: 'home',
      arguments: { name: 'kitchen light' },
      ok: true,
      outcome: 'ok',
      content: 'Turned on kitchen light',
      round: 0,
    };
    const endCalls = end['toolCalls'] as Array<Record<string, unknown>>;
    t.is(endCalls?.length, 1, JSON.stringify(endCalls));
    t.like(endCalls[0], recorded);
    ws.close();
    await stop();
    const db = openStore(join(dataDir, STORE_FILE));
    try {
      const [row] = new VoiceTurnStore(db, { maxTurns: 100, maxAgeHours: 24 }).recent(1);
      t.like(row, { turn: 1, status: 'completed', reply: String(end['reply']) });
      t.is(row?.transcript, String(transcript?.['text']));
      t.is(row?.toolCalls?.length, 1);
      t.like(row?.toolCalls?.[0], recorded);
    } finally {
      db.close();
    }
  },
);
