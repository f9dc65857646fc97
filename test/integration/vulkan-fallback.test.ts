// Live fallback off a real GPU backend, end to end: `mnn-edge run` as its own process with real MNN, a real
// mosquitto, the fixture models in its store, voice.llm pinned to Vulkan (lavapipe here, a Mali/Adreno driver on a
// board), and a voice session open on the dashboard's voice socket. Vulkan is then made unusable for real, as a
// driver reset would: the engine host serving it is SIGKILLed and the ICD file VK_ICD_FILENAMES names disappears,
// so every new host (and every probe) finds no Vulkan driver. Then the driver comes back.
// What must hold: the runtime falls back to cpu, the session stays open with its history, a request that had no
// token yet is retried on the fallback without the caller noticing, the turn that had streamed tokens ends with
// finishReason backend-lost, the next turn is answered; Vulkan is used again only after probes in fresh hosts
// pass (two in a row, not before 10 s); and each transition reaches the log, the dashboard and the fleet.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { connect, type MqttClient } from 'mqtt';
import OpenAI from 'openai';
import WebSocket from 'ws';
import { STORE_FILE } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { deviceTopics } from '../../lib/topics.js';
import { ModelStore } from '../../models/index.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';
import { mediaFixturesDir, modelFixturesDir } from '../helpers/paths.js';
import { spawnAgentRun } from '../helpers/run-agent.js';
import { skipWithLine } from '../helpers/skip.js';

const DEVICE = 'vk-fallback';
const topics = deviceTopics(DEVICE);
const LAVAPIPE_ICD = '/usr/share/vulkan/icd.d/lvp_icd.x86_64.json';

/** Why this machine cannot run the test, or undefined when it can. */
function missing(): string | undefined {
  if (!mosquittoAvailable()) return 'no mosquitto (scripts/install-test-deps.sh)';
  const engine = engineAvailability();
  if (!engine.available) return unavailableMessage(engine.reason);
  const vulkan = engine.info.probes?.find((p) => p.name === 'vulkan');
  if (!vulkan?.compiledIn) return 'the installed MNN has no Vulkan backend';
  const failed = vulkan.steps.find((s) => s.status === 'fail');
  if (failed) return `no usable Vulkan device (${failed.step}: ${failed.detail})`;
  // The fault is made by removing a copy of the ICD file; lavapipe's is the one this machine has.
  if (!existsSync(LAVAPIPE_ICD)) return `no ${LAVAPIPE_ICD} to stand in for the board's driver`;
  return undefined;
}

interface Json {
  [k: string]: unknown;
}
interface RuntimeView {
  state: {
    serving: Record<string, string>;
    instances: Array<{ key: string; pid: number; status: string; inflight: number }>;
  };
}
interface PlacementView {
  backends?: Array<{ backend: string; status: string; reason: string; successes: number }>;
  slotStates: Array<{ slot: string; phase: string; reason?: string }>;
}
interface FleetEvent {
  type: string;
  data?: Json;
}

async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  ms: number,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function importFixtures(dataDir: string): Promise<void> {
  // Installed as an operator would (mnn-edge models import), before the daemon starts.
  const db = openStore(join(dataDir, STORE_FILE), { migrations: allMigrations });
  const { store } = ModelStore.open({ dataDir, db, log: createMemoryLogger() });
  for (const name of ['silero-vad', 'tiny-omni-audio', 'tiny-llm'])
    await store.import(join(modelFixturesDir, name), { version: '1.0.0' });
  store.close();
  db.close();
}

/** The fleet's side: every event, and the latest retained placement document. */
function fleetWatcher(url: string) {
  const events: FleetEvent[] = [];
  let placement: Json | undefined;
  const client: MqttClient = connect(url, { protocolVersion: 5, clientId: 'vk-fallback-fleet' });
  client.on('error', () => undefined);
  client.on('message', (topic, payload) => {
    if (payload.length === 0) return;
    const body = JSON.parse(payload.toString()) as Json;
    if (topic === topics.events) events.push(body as unknown as FleetEvent);
    else if (topic === topics.document('placement')) placement = body['data'] as Json;
  });
  client.subscribe([topics.events, topics.document('placement')], { qos: 1 });
  return {
    events,
    placement: () => placement,
    /** The runtime's events of one type, in order. */
    of: (type: string) => events.filter((e) => e.type === type).map((e) => e.data ?? {}),
    close: () => client.endAsync(),
  };
}

/** The placement document's verdict on voice.llm (the fleet reads the dashboard's slot states). */
function llmPhase(doc: Json | undefined): string | undefined {
  const states = (doc?.['slotStates'] as PlacementView['slotStates'] | undefined) ?? [];
  return states.find((s) => s.slot === 'voice.llm')?.phase;
}

async function voiceSession(port: number, token: string) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/voice`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  const messages: Json[] = [];
  let closed: number | undefined;
  ws.on('message', (data, isBinary) => {
    if (!isBinary) messages.push(JSON.parse(String(data)) as Json);
  });
  ws.on('close', (code) => {
    closed = code;
  });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const wav = readFileSync(join(mediaFixturesDir, 'speech-hello-16k.wav'));
  const speech = wav.subarray(44);
  const silence = (s: number) => Buffer.alloc(Math.round(16000 * 2 * s));
  return {
    messages,
    closed: () => closed,
    send: (m: Json) => ws.send(JSON.stringify(m)),
    /** One utterance, as the browser streams it: 100 ms frames of 16 kHz mono s16le. */
    speak() {
      // The previous reply counts as playing until the client says it is done (half duplex would gate us).
      ws.send(JSON.stringify({ type: 'playback-done' }));
      const audio = Buffer.concat([silence(0.5), speech, silence(1.5)]);
      for (let at = 0; at < audio.length; at += 3200) ws.send(audio.subarray(at, at + 3200));
    },
    waitFor: (what: string, pred: (m: Json) => boolean, ms = 120_000) =>
      until(what, () => messages.find(pred), ms).catch((err: Error) => {
        throw new Error(`${err.message}; voice events: ${JSON.stringify(messages.slice(-8))}`);
      }),
    close: () => ws.close(),
  };
}

const why = missing();
if (why) {
  skipWithLine(`SKIP live Vulkan fallback with a voice session: ${why}`);
} else {
  test('Vulkan lost under a voice session: cpu takes over with the history, probes bring Vulkan back, everyone is told', async (t) => {
    t.timeout(600_000);
    const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-vk-fallback-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    await importFixtures(dataDir);
    // The board's driver registration: a copy we can take away and put back.
    const icd = join(dir, 'icd', 'lvp.json');
    mkdirSync(join(dir, 'icd'));
    copyFileSync(LAVAPIPE_ICD, icd);

    const broker = await startMosquitto();
    t.teardown(() => broker.close());
    const fleet = fleetWatcher(broker.url);
    t.teardown(() => fleet.close());

    const child = spawnAgentRun(dataDir, {
      env: { VK_ICD_FILENAMES: icd },
      config: {
        deviceId: DEVICE,
        mqtt: { url: broker.url, reconnect: { minMs: 100, maxMs: 800 } },
        slots: {
          'voice.vad': { model: 'silero-vad' },
          'voice.asr': { model: 'tiny-omni-audio' },
          'voice.llm': { model: 'tiny-llm' },
        },
        // Long enough that the fault lands while the reply streams (lavapipe decodes tiny-llm at tens of tok/s).
        voice: { maxNewTokens: 200 },
      },
    });
    let out = '';
    let exited = false;
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.once('exit', () => {
      exited = true;
    });
    t.teardown(() => {
      if (!exited) child.kill('SIGKILL');
    });
    const port = Number(
      (await until(
        'the agent listening',
        () => /"msg":"listening".*?"port":(\d+)/.exec(out)?.[1],
        120_000,
      )) ?? 0,
    );
    const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
    const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const json = (await res.json()) as T;
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const servingLlm = async () => (await api<RuntimeView>('GET', '/api/runtime')).state.serving['voice.llm'];
    const onVulkan = (key: string | undefined) => key?.includes('|vulkan ') === true;
    const onCpu = (key: string | undefined) => key?.includes('|cpu ') === true;
    const logged = (msg: string) => out.split('\n').filter((l) => l.includes(`"msg":"${msg}"`));

    // ---- voice.llm pinned to Vulkan, a session open with one turn of history ----
    await api('PUT', '/api/runtime/pins/voice.llm', { backend: 'vulkan' });
    const vulkanKey = await until(
      'voice.llm served on vulkan',
      async () => {
        const key = await servingLlm();
        return onVulkan(key) ? key : undefined;
      },
      180_000,
    );
    const voice = await voiceSession(port, token);
    t.teardown(() => voice.close());
    voice.send({ type: 'start', mode: 'vad' });
    await voice.waitFor('ready', (m) => m['type'] === 'ready');
    voice.speak();
    const turn1 = await voice.waitFor('turn 1', (m) => m['type'] === 'turn-end' && m['turn'] === 1);
    t.is(turn1['status'], 'completed', JSON.stringify(turn1));
    const metrics1 = turn1['metrics'] as { promptTokens: number; generatedTokens: number };
    t.true(metrics1.generatedTokens > 0);

    // ---- turn 2 streams on Vulkan; an API request waits behind it in the same host ----
    voice.speak();
    await voice.waitFor('turn 2 streaming', (m) => m['type'] === 'reply-delta' && m['turn'] === 2);
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: token, maxRetries: 0 });
    const queued = (async () => {
      const stream = await client.chat.completions.create({
        model: 'tiny-llm',
        messages: [{ role: 'user', content: 'Hello' }],
        max_tokens: 8,
        stream: true,
      });
      let text = '';
      let finish: string | null = null;
      for await (const c of stream) {
        text += c.choices[0]?.delta.content ?? '';
        finish = c.choices[0]?.finish_reason ?? finish;
      }
      return { text, finish };
    })();
    const victim = await until(
      'both requests in the Vulkan host',
      async () => {
        const view = await api<RuntimeView>('GET', '/api/runtime');
        return view.state.instances.find((i) => i.key === vulkanKey && i.inflight >= 2);
      },
      60_000,
    );

    // ---- the driver goes away: the host dies, new hosts find no Vulkan driver ----
    rmSync(icd);
    process.kill(victim.pid, 'SIGKILL');

    const turn2 = await voice.waitFor('turn 2 end', (m) => m['type'] === 'turn-end' && m['turn'] === 2);
    t.is(turn2['finishReason'], 'backend-lost', JSON.stringify(turn2));
    t.regex(
      String(turn2['error']),
      new RegExp(`^reply cut short: .*pid ${victim.pid}.*exited unexpectedly \\(signal SIGKILL\\)`),
    );
    t.true(String(turn2['reply']).length > 0);
    // The request that had no token yet was answered in full on the fallback, as if nothing happened.
    const rescued = await queued;
    t.is(rescued.finish, 'length');
    t.true(rescued.text.length > 0);
    t.true(onCpu(await servingLlm()));

    // The dashboard: voice.llm on its fallback, Vulkan held down with the reason.
    const during = await api<PlacementView>('GET', '/api/placement');
    t.is(during.slotStates.find((s) => s.slot === 'voice.llm')?.phase, 'fallback', JSON.stringify(during));
    const held = during.backends?.find((b) => b.backend === 'vulkan');
    t.regex(held?.reason ?? '', /exited unexpectedly \(signal SIGKILL\)/);
    // The fleet: the retained placement says the same.
    await until(
      'placement document: fallback',
      () => llmPhase(fleet.placement()) === 'fallback' || undefined,
      30_000,
    );

    // ---- the next turn is answered on cpu, with the history of both earlier turns ----
    voice.speak();
    const turn3 = await voice.waitFor('turn 3', (m) => m['type'] === 'turn-end' && m['turn'] === 3);
    t.is(turn3['status'], 'completed', JSON.stringify(turn3));
    t.not(turn3['finishReason'], 'backend-lost');
    const metrics3 = turn3['metrics'] as { promptTokens: number };
    t.true(
      metrics3.promptTokens > metrics1.promptTokens + metrics1.generatedTokens,
      `turn 3 prompt ${metrics3.promptTokens} tokens vs turn 1 ${metrics1.promptTokens} + reply ${metrics1.generatedTokens}`,
    );
    t.is(voice.closed(), undefined, 'the voice session stayed open');

    // ---- while the driver is missing the probes fail; then it comes back ----
    await until(
      'a failed Vulkan probe',
      () =>
        fleet.of('runtime.backend-health').some((e) => e['status'] === 'probe' && e['ok'] === false) ||
        undefined,
      60_000,
    );
    t.true(onCpu(await servingLlm()), 'no return while probes fail');
    copyFileSync(LAVAPIPE_ICD, icd);
    await until('runtime.recovered', () => fleet.of('runtime.recovered').length > 0 || undefined, 120_000);
    await until('voice.llm back on vulkan', async () => onVulkan(await servingLlm()) || undefined, 60_000);

    // Hysteresis: down, failed probes, two passing probes in a row, then up — not before 10 s.
    const health = fleet.of('runtime.backend-health').filter((e) => e['backend'] === 'vulkan');
    const steps = health.map((e) =>
      e['status'] === 'probe' ? `probe ${e['ok'] ? 'ok' : 'fail'} ${e['successes']}` : String(e['status']),
    );
    t.is(steps[0], 'down', steps.join(', '));
    t.is(steps.at(-1), 'up', steps.join(', '));
    t.deepEqual(steps.slice(-3), ['probe ok 1', 'probe ok 2', 'up'], steps.join(', '));
    t.true(steps.includes('probe fail 0'), steps.join(', '));
    t.true(Number(health.at(-1)!['downForMs']) >= 10_000, JSON.stringify(health.at(-1)));
    // Each transition went out on MQTT events ...
    const fellBack = fleet.of('runtime.fallback');
    t.true(
      fellBack.some((e) => e['fromKey'] === vulkanKey && onCpu(String(e['toKey']))),
      JSON.stringify(fellBack),
    );
    t.deepEqual(
      fleet
        .of('runtime.request-rescued')
        .map((e) => e['outcome'])
        .sort(),
      ['cut-short', 'retried'],
    );
    t.is(fleet.of('runtime.recovered').at(-1)?.['key'], vulkanKey);
    // ... into the log ...
    for (const msg of [
      'fallback',
      'backend down: held until probes pass',
      'request retried on the fallback',
      'request cut short: backend lost',
      'backend back: probes passed',
      'back on the preferred placement',
    ])
      t.true(logged(msg).length > 0, `log record "${msg}"`);
    // ... and to the dashboard and the retained placement, now that Vulkan is back.
    const after = await api<PlacementView>('GET', '/api/placement');
    t.deepEqual(after.backends ?? [], []);
    t.is(after.slotStates.find((s) => s.slot === 'voice.llm')?.phase, 'serving');
    await until(
      'placement document: serving',
      () => llmPhase(fleet.placement()) === 'serving' || undefined,
      30_000,
    );

    // Back on Vulkan, the session goes on.
    voice.speak();
    const turn4 = await voice.waitFor('turn 4', (m) => m['type'] === 'turn-end' && m['turn'] === 4);
    t.is(turn4['status'], 'completed', JSON.stringify(turn4));
    t.is(voice.closed(), undefined);
    voice.close();
    const exit = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    t.is(await exit, 0);
  });
}
