import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { connect } from 'mqtt';
import { composeModules } from '../../agent/compose.js';
import { defaultConfig } from '../../agent/config/defaults.js';
import type { AgentConfig } from '../../agent/config/schema.js';
import { capabilitiesSchema } from '../../agent/detect/schema.js';
import { createAgent } from '../../agent/main.js';
import { engineAvailability } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { validate } from '../../lib/schema.js';
import { modelFixturesDir, socFixturesDir } from '../helpers/paths.js';

// The daemon as `mnn-edge run` composes it: the retained documents reach the broker, follow model installs,
// and a reload re-detects and replans.
test('retained capabilities, models and placement documents; reload', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-compose-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const base = defaultConfig({});
  const config: AgentConfig = {
    ...base,
    deviceId: 'doc-dev',
    dataDir: join(dir, 'data'),
    root: join(socFixturesDir, 'rockchip-rk3588-rock5b'),
    http: { ...base.http, bind: '127.0.0.1', port: 0 },
    mqtt: { ...base.mqtt, embeddedBroker: { enabled: true, port: 0, host: '127.0.0.1' } },
    slots: { 'voice.llm': { model: 'tiny-llm' } },
  };
  const composed = composeModules(config, { agentVersion: '9.9.9' });
  const agent = createAgent(config, {
    logger: createMemoryLogger(),
    version: '9.9.9',
    modules: composed.modules,
  });
  await agent.start();
  t.teardown(() => agent.stop('test done'));

  const url = composed.services.fleet().agent!.brokerUrl!;
  const client = connect(url, { protocolVersion: 4 });
  t.teardown(() => client.end(true));
  const docs = new Map<string, { data: Record<string, unknown> }>();
  const waiters: Array<() => void> = [];
  client.on('message', (topic, payload) => {
    docs.set(topic.split('/').pop()!, JSON.parse(payload.toString()) as { data: Record<string, unknown> });
    for (const w of waiters.splice(0)) w();
  });
  client.subscribe('mnn-edge/doc-dev/+');
  const until = async (pred: () => boolean) => {
    const deadline = Date.now() + 15_000;
    while (!pred()) {
      if (Date.now() > deadline)
        throw new Error(
          `timed out; have ${[...docs.keys()].join(', ')}; slot states ${JSON.stringify(docs.get('placement')?.data['slotStates'])}`,
        );
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  };

  await until(() => docs.has('capabilities') && docs.has('models') && docs.has('placement'));
  const caps = docs.get('capabilities')!.data as { soc: { family: { value: string } }; agentVersion: string };
  t.is(caps.soc.family.value, 'rk3588');
  t.is(caps.agentVersion, '9.9.9');
  // The retained document is what docs/schemas/capabilities.schema.json describes, with what the agent adds.
  t.deepEqual(validate(capabilitiesSchema, caps), []);
  if (engineAvailability().available) {
    // The runtime's engine probe reached the document: this MNN has no RKNN plugin, whatever the board offers.
    const rknn = (
      caps as unknown as { backends: { backend: string; usable: boolean; reasons: string[] }[] }
    ).backends.find((b) => b.backend === 'rknn')!;
    t.false(rknn.usable);
    t.is(rknn.reasons[0], 'MNN built without rknn');
  }
  t.is(docs.get('models')!.data['installedVersion'], '');

  await composed.services.models()!.store.import(join(modelFixturesDir, 'tiny-llm'));
  await until(() => docs.get('models')!.data['installedVersion'] === 'tiny-llm@0.0.0');
  const packages = docs.get('models')!.data['packages'] as { id: string; task: string }[];
  t.deepEqual(
    packages.map((p) => [p.id, p.task]),
    [['tiny-llm', 'llm']],
  );

  const result = await composed.services.reload(undefined, 'test reload');
  t.like(result, { reloaded: true, config: 'unchanged' });
  await until(() => {
    const slots = (docs.get('placement')?.data['slots'] ?? []) as { slot: string }[];
    return slots.some((s) => s.slot === 'voice.llm');
  });
  // The document carries the same slot state the dashboard shows, and follows it past "planned": serving, or
  // failed with its reason (this fixture root has no /proc/meminfo for the runtime's memory check).
  await until(() => {
    const states = (docs.get('placement')?.data['slotStates'] ?? []) as {
      slot: string;
      phase: string;
      reason?: string;
    }[];
    const llm = states.find((s) => s.slot === 'voice.llm');
    return llm?.phase === 'serving' || (llm?.phase === 'failed' && (llm.reason ?? '').length > 0);
  });

  const ctx = { deviceId: 'doc-dev', signal: new AbortController().signal, logger: createMemoryLogger() };
  const commands = composed.services.commands;
  t.like(await commands.dispatch('restart-workload', { workload: 'vision' }, ctx), {
    ok: true,
    result: { workload: 'vision', slots: ['vision.vlm'], restarted: [] },
  });
  t.deepEqual(await commands.dispatch('restart-workload', { workload: 'audio' }, ctx), {
    ok: false,
    error: {
      code: 'EPARAMS',
      message:
        'Invalid params for restart-workload: workload: expected one of "voice", "vision", got "audio"',
    },
  });
  t.like(await commands.dispatch('reload', undefined, ctx), { ok: true, result: { reloaded: true } });
});
