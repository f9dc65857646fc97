import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import mqtt from 'mqtt';
import type { HaComponent, HaDeviceConfig } from '../../agent/fleet/ha-discovery.js';
import { STORE_FILE } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelStore } from '../../models/index.js';
import { repoFromDir, startHuggingFaceStandin } from '../helpers/hub-standins.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';
import { modelFixturesDir, repoRoot } from '../helpers/paths.js';
import { spawnAgentRun } from '../helpers/run-agent.js';

// Every entity Home Assistant discovers from a running agent must show data: each template in the discovery
// message (state, attributes, availability, commands) is rendered with Jinja2 — the engine Home Assistant
// uses — against the messages that agent really published on the topics the entity reads, and fails on an
// error (a missing key), `None` or an empty result. Then the selects are used the way Home Assistant uses
// them: the rendered command goes to the command topic, and the change shows in the entity's state; a model
// pulled at run time appears among the model select's options.

const RENDERER = join(repoRoot, 'test/helpers/ha-render.py');

/** A python3 that can import jinja2 (Debian's python3-jinja2; scripts/install-test-deps.sh installs it). */
function jinjaPython(): string | undefined {
  for (const py of ['/usr/bin/python3', 'python3'])
    if (spawnSync(py, ['-c', 'import jinja2'], { stdio: 'ignore' }).status === 0) return py;
  return undefined;
}

interface Job {
  id: string;
  template: string;
  value: string;
  value_json?: unknown;
}

function render(py: string, jobs: Job[]): Map<string, { result?: string; error?: string }> {
  const r = spawnSync(py, [RENDERER], { input: JSON.stringify(jobs), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`renderer failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as Array<{ id: string; result?: string; error?: string }>;
  return new Map(out.map((o) => [o.id, o]));
}

/** The last message on each topic, as Home Assistant (subscribed to all of them) would hold it. */
function capture(url: string) {
  const last = new Map<string, string>();
  const client = mqtt.connect(url, { protocolVersion: 5 });
  client.on('message', (topic, payload) => last.set(topic, payload.toString('utf8')));
  const ready = new Promise<void>((resolve) =>
    client.on('connect', () => {
      void client.subscribeAsync(['homeassistant/#', 'mnn-edge/#']).then(() => resolve());
    }),
  );
  return { last, client, ready };
}

async function until(what: string, pred: () => boolean, log: () => string, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${log().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The template fields of one component, each with the topic whose message it renders. */
function jobsOf(id: string, c: HaComponent, last: Map<string, string>, t: ExecutionContext): Job[] {
  const jobs: Job[] = [];
  for (const [key, template] of Object.entries(c)) {
    if (!key.endsWith('_template') || typeof template !== 'string') continue;
    if (key === 'command_template') {
      // Rendered with each choice the entity offers; `value` is what Home Assistant passes.
      for (const option of (c['options'] as string[] | undefined) ?? ['1'])
        jobs.push({ id: `${id} ${key} [${option}]`, template, value: option });
      continue;
    }
    const topicKey = key === 'value_template' ? 'state_topic' : key.replace(/_template$/, '_topic');
    const topic = c[topicKey] ?? c['state_topic'];
    if (typeof topic !== 'string') {
      t.fail(`${id}: ${key} has no topic to read (${topicKey})`);
      continue;
    }
    const payload = last.get(topic);
    if (payload === undefined) {
      t.fail(`${id}: ${key} reads ${topic}, on which the agent published nothing`);
      continue;
    }
    jobs.push({ id: `${id} ${key}`, template, value: payload, value_json: JSON.parse(payload) });
  }
  return jobs;
}

function checkResult(
  t: ExecutionContext,
  c: HaComponent,
  id: string,
  r: { result?: string; error?: string } | undefined,
) {
  if (!r || r.error !== undefined) return t.fail(`${id}: ${r?.error ?? 'not rendered'}`);
  const v = r.result!.trim();
  if (v === '' || v === 'None' || v === 'undefined')
    return t.fail(`${id} renders ${JSON.stringify(r.result)}`);
  if (id.endsWith('command_template') || id.includes('command_template ['))
    t.notThrows(() => JSON.parse(v), `${id} is JSON`);
  else if (id.endsWith('json_attributes_template') || c.p === 'update')
    t.true(typeof JSON.parse(v) === 'object', `${id} renders a JSON object`);
  else if (c['state_class'] === 'measurement')
    t.false(Number.isNaN(Number(v)), `${id} renders a number: ${v}`);
  else if (c.p === 'select')
    t.true((c['options'] as string[]).includes(v), `${id}: ${v} is one of the options`);
  t.pass();
}

const py = jinjaPython();
if (!mosquittoAvailable() || !py) {
  test(`Home Assistant templates (skipped: ${py ? 'mosquitto' : 'python3-jinja2'} not installed; run scripts/install-test-deps.sh)`, (t) =>
    t.pass());
} else {
  test('every discovered entity renders real data; the selects change the agent; pulled models become options', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-ha-'));
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    const db = openStore(join(dataDir, STORE_FILE), { migrations: allMigrations });
    const { store } = ModelStore.open({ dataDir, db, log: createMemoryLogger() });
    for (const name of ['tiny-llm', 'silero-vad'])
      await store.import(join(modelFixturesDir, name), { version: '1.0.0' });
    store.close();
    db.close();
    const hub = await startHuggingFaceStandin([
      repoFromDir('taobao-mnn', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm')),
    ]);
    const broker = await startMosquitto();
    const child = spawnAgentRun(dataDir, {
      config: {
        deviceId: 'ha-dev',
        mqtt: { url: broker.url, protocolVersion: 5 },
        telemetry: { sampleIntervalMs: 200, publishIntervalMs: 500 },
        slots: { 'voice.llm': { model: 'tiny-llm' }, 'voice.vad': { model: 'silero-vad' } },
        models: { sources: { hf: { endpoint: hub.endpoint }, allowLoopbackHttp: true } },
      },
    });
    let log = '';
    child.stdout.on('data', (c: Buffer) => (log += c.toString()));
    child.stderr.on('data', (c: Buffer) => (log += c.toString()));
    const { last, client, ready } = capture(broker.url);
    t.teardown(async () => {
      child.kill('SIGKILL');
      await client.endAsync();
      await broker.close();
      await hub.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await ready;
    const discoveryTopic = 'homeassistant/device/ha-dev/config';
    const discovery = () => JSON.parse(last.get(discoveryTopic) ?? '{"cmps":{}}') as HaDeviceConfig;
    const telemetry = () => JSON.parse(last.get('mnn-edge/ha-dev/telemetry') ?? '{}') as { slots?: object };
    await until(
      'discovery with the placed slots, telemetry with them, and the documents',
      () =>
        'mnn_edge_ha-dev_slot_voice_llm_tokens_per_sec' in discovery().cmps &&
        'mnn_edge_ha-dev_slot_voice_llm_model_select' in discovery().cmps &&
        'voice.llm' in (telemetry().slots ?? {}) &&
        ['status', 'config', 'models'].every((k) => last.has(`mnn-edge/ha-dev/${k}`)),
      () => log,
    );

    const cfg = discovery();
    const components = Object.entries(cfg.cmps).filter(([, c]) => Object.keys(c).length > 1);
    const jobs = components.flatMap(([id, c]) => jobsOf(id, c, last, t));
    for (const [i, a] of cfg.availability.entries())
      jobs.push({
        id: `availability[${i}]`,
        template: a.value_template,
        value: last.get(a.topic) ?? '',
        value_json: JSON.parse(last.get(a.topic) ?? 'null'),
      });
    const rendered = render(py, jobs);
    t.log(`${jobs.length} templates of ${components.length} entities rendered`);
    for (const job of jobs) {
      const c = cfg.cmps[job.id.split(' ')[0]!] ?? ({ p: 'availability', unique_id: job.id } as HaComponent);
      checkResult(t, c, job.id, rendered.get(job.id));
    }
    t.is(rendered.get('availability[0]')?.result, 'online');
    t.is(rendered.get('mnn_edge_ha-dev_slot_voice_llm_tokens_per_sec value_template')?.result, '0');
    // (The active-model sensor says `none` until the engine has loaded the model; the generic check covers it.)
    t.is(rendered.get('mnn_edge_ha-dev_slot_voice_llm_model_select value_template')?.result, 'tiny-llm');
    const vad = cfg.cmps['mnn_edge_ha-dev_slot_voice_vad_model_select']!;
    t.deepEqual(vad['options'], ['none', 'energy-vad (built-in)', 'silero-vad']);

    // Home Assistant picks the built-in VAD: the rendered command goes to the command topic as it would.
    const [command] = render(py, [
      { id: 'c', template: String(vad['command_template']), value: 'energy-vad (built-in)' },
    ]).values();
    await client.publishAsync(String(vad['command_topic']), command!.result!, { qos: 1 });
    const configDoc = () =>
      JSON.parse(last.get('mnn-edge/ha-dev/config')!) as {
        data: { effective: { slots?: Record<string, { builtin?: string }> } };
      };
    await until(
      'the built-in VAD in the config document',
      () => configDoc().data.effective.slots?.['voice.vad']?.builtin === 'energy-vad',
      () => log,
      60_000,
    );
    const vadState = render(py, [
      { id: 's', template: String(vad['value_template']), value: '', value_json: configDoc() },
    ]).get('s');
    t.is(vadState?.result, 'energy-vad (built-in)', vadState?.error);
    const port = Number(/"msg":"listening".*?"port":(\d+)/.exec(log)![1]);
    const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
    const history = (await (
      await fetch(`http://127.0.0.1:${port}/api/config/history`, {
        headers: { Authorization: `Bearer ${token}` },
      })
    ).json()) as { entries: Array<{ who: string; changes: Array<{ key: string; new: unknown }> }> };
    t.is(history.entries[0]?.who, 'home assistant');
    t.deepEqual(
      history.entries[0]?.changes.map((c) => c.key),
      ['slots.voice.vad.builtin', 'slots.voice.vad.model'],
    );

    // A model pulled at run time becomes a choice: the discovery is announced again with it.
    await client.publishAsync(
      'mnn-edge/ha-dev/cmd/pull-model',
      JSON.stringify({ params: { source: 'hf://taobao-mnn/tiny-llm-MNN' } }),
      { qos: 1 },
    );
    await until(
      'the pulled model among the voice.llm model options',
      () =>
        (
          (discovery().cmps['mnn_edge_ha-dev_slot_voice_llm_model_select']?.['options'] as
            | string[]
            | undefined) ?? []
        ).includes('tiny-llm-mnn'),
      () => log,
      120_000,
    );
    t.pass();
  });
}
