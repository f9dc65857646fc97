// Graph (MNN Express::Module) hosting and runtime info through engine hosts: Silero VAD runs in a child with the same numbers as in
// process, and MNN's runtime is probed by a short-lived host so the caller never loads the addon.
import { readFileSync } from 'node:fs';
import test from 'ava';
import { createEngineInfo, EngineHostClient, engineInfo, type Tensor } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { engineOrSkip, media, models, readWavMono16 } from './_engine.js';

type EngineInfoResult = Awaited<ReturnType<EngineHostClient['runtimeInfo']>>;

function withoutTimings(result: EngineInfoResult): EngineInfoResult {
  if (!result.available || result.info.probes === undefined) return result;
  const probes = result.info.probes.map((p) => ({
    ...p,
    initMs: 0,
    steps: p.steps.map((s) =>
      s.step === 'init-probe' ? { ...s, detail: s.detail.replace(/\(\d+ ms\)/, '(… ms)') } : s,
    ),
  }));
  return { ...result, info: { ...result.info, probes } };
}

const SILERO_IO = { inputs: ['input', 'state', 'sr'], outputs: ['output', 'stateN'] };

test('engineInfo without an addon answers unavailable without starting a host', async (t) => {
  const info = await engineInfo({
    env: { ...process.env, MNN_EDGE_ENGINE_ADDON: '/nonexistent/addon.node' },
  });
  t.deepEqual(info, {
    available: false,
    reason:
      'the engine addon is not built (looked for /nonexistent/addon.node; the build is skipped when no MNN install is found)',
  });
});

if (engineOrSkip(test, 'engine host modules')) {
  test('a host serves Silero VAD: probabilities match the recorded MNN output', async (t) => {
    await using host = await EngineHostClient.start({ name: 'silero', logger: createMemoryLogger() });
    const loaded = await host.loadGraph(models.sileroVad, SILERO_IO);
    t.is(loaded.path, models.sileroVad);
    t.deepEqual(
      loaded.info.inputs.map((i) => i.name),
      ['input', 'state', 'sr'],
    );
    const expected = JSON.parse(readFileSync(media.vadExpected, 'utf8')) as { probabilities: number[] };
    const { samples } = readWavMono16(media.vadWav);
    const input = new Float32Array(576);
    let state: Float32Array = new Float32Array(256);
    let worst = 0;
    for (let i = 0, start = 0; start < samples.length; start += 512, i++) {
      input.copyWithin(0, 512);
      input.fill(0, 64);
      input.set(samples.subarray(start, start + 512), 64);
      const inputs: Tensor[] = [
        { data: input, shape: [1, 576] },
        { data: state, shape: [2, 1, 128] },
        { data: new Int32Array([16000]), shape: [] },
      ];
      const [prob, stateN] = await host.forward(inputs);
      t.true(prob!.data instanceof Float32Array);
      state = stateN!.data as Float32Array;
      worst = Math.max(worst, Math.abs(prob!.data[0]! - expected.probabilities[i]!));
    }
    t.true(worst < 1e-3, `max |Δp| ${worst}`);
  });

  test('a module host refuses LLM requests and a second model with clear errors', async (t) => {
    await using host = await EngineHostClient.start({ name: 'silero', logger: createMemoryLogger() });
    await t.throwsAsync(() => host.forward([]), {
      message: 'engine host: forward needs a loaded graph (send load-graph first)',
    });
    await host.loadGraph(models.sileroVad, SILERO_IO);
    await t.throwsAsync(() => host.complete('Hello'), {
      message: 'engine host: generate needs an LLM, this host holds a graph',
    });
    await t.throwsAsync(() => host.load(models.tinyLlm), {
      message: `engine host already holds ${models.sileroVad}; unload it first`,
    });
    await t.throwsAsync(() => host.forward([{ data: new Float32Array(3), shape: [1, 3] }]), {
      message: `Module.forward: ${models.sileroVad} takes 3 inputs but received 1`,
    });
    await host.unload();
    await host.load(models.tinyLlm);
    await t.throwsAsync(() => host.forward([]), {
      message: 'engine host: forward needs a graph, this host holds an LLM',
    });
  });

  test('runtime-info comes from a child; createEngineInfo probes once and caches', async (t) => {
    await using host = await EngineHostClient.start({ name: 'info', logger: createMemoryLogger() });
    const direct = await host.runtimeInfo();
    t.true(direct.available);
    if (!direct.available) return;
    t.regex(direct.info.mnnVersion, /^\d+\.\d+\.\d+/);
    t.true(direct.info.backends.some((b) => b.name === 'cpu' && b.usable));

    const logger = createMemoryLogger();
    const info = createEngineInfo({ logger });
    const [a, b] = await Promise.all([info(), info()]);
    t.is(a, b);
    // Two hosts, two init probes: the same evidence, but their timings differ.
    t.deepEqual(withoutTimings(a), withoutTimings(direct));
    t.is(await info(), a);
    const started = () => logger.lines.filter((l) => l.includes('"msg":"ready"')).length;
    // One host answered all three calls.
    t.is(started(), 1);
    info.invalidate();
    t.not(await info(), a);
    t.is(started(), 2);
  });
}

if (engineOrSkip(test, 'engine host speech')) {
  test('speak through a host: a model without a talker is refused with the engine message', async (t) => {
    await using host = await EngineHostClient.start({ name: 'tiny-llm', logger: createMemoryLogger() });
    await host.load(models.tinyLlm);
    const chunks: unknown[] = [];
    const err = await t.throwsAsync(async () => {
      for await (const c of host.speak({ text: 'hi' })) chunks.push(c);
    });
    t.is(err?.message, `${models.tinyLlm} has no talker (has_talker is not set in its config)`);
    t.is((err as { code?: string }).code, 'ENOTSUP');
    t.deepEqual(chunks, []);
    // The host still serves its model.
    t.true((await host.complete('Hello', { maxNewTokens: 2 })).text.length > 0);
  });
}
