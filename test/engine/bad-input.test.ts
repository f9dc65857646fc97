// Bad input meets specific errors before (or instead of) MNN's silent fallbacks and crashes.
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import test from 'ava';
import { EngineError, Llm, MnnGraph, runtimeInfo } from '../../engine/index.js';
import { engineOrSkip, expectedOutput, models } from './_engine.js';

/** A copy of a fixture model directory with one file replaced by noise. */
function corruptCopy(configPath: string, file: string): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-corrupt-'));
  const src = dirname(configPath);
  for (const f of readdirSync(src)) copyFileSync(join(src, f), join(dir, f));
  writeFileSync(join(dir, file), Buffer.alloc(3000, 0x5a));
  return { dir, config: join(dir, 'config.json') };
}

if (engineOrSkip(test, 'bad input')) {
  test('runtimeInfo names the MNN version and which backends this build has', (t) => {
    const info = runtimeInfo();
    t.regex(info.mnnVersion, /^\d+\.\d+\.\d+/);
    const cpu = info.backends.find((b) => b.name === 'cpu');
    t.deepEqual(cpu && { compiledIn: cpu.compiledIn, usable: cpu.usable }, {
      compiledIn: true,
      usable: true,
    });
    t.true(info.backends.some((b) => b.name === 'opencl'));
    t.is(typeof info.cpu.fp16, 'boolean');
  });

  test('a missing config is a specific error', async (t) => {
    const err = await t.throwsAsync(() => Llm.load('/nonexistent/model/config.json'), {
      instanceOf: EngineError,
    });
    t.is(err?.code, 'ENOENT');
    t.is(err?.message, 'LLM config file not found: /nonexistent/model/config.json');
  });

  test('a corrupt llm.mnn fails the load with the MNN call and the file named', async (t) => {
    const { dir, config } = corruptCopy(models.tinyLlm, 'llm.mnn');
    try {
      const err = await t.throwsAsync(() => Llm.load(config), { instanceOf: EngineError });
      t.is(err?.code, 'ELOAD');
      t.is(err?.message, `MNN Llm::load failed for ${config} (MNN's reason is in the engine log)`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a corrupt .mnn for Module fails the load', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-corrupt-'));
    const path = join(dir, 'noise.mnn');
    writeFileSync(path, Buffer.alloc(5000, 0x42));
    try {
      await t.throwsAsync(() => MnnGraph.load(path, { inputs: ['input'], outputs: ['output'] }), {
        message: `MNN Module::load failed for ${path} (not an MNN model, corrupt, or wrong input/output names)`,
      });
      await t.throwsAsync(() => MnnGraph.load(join(dir, 'missing.mnn'), { inputs: ['a'], outputs: ['b'] }), {
        message: `model file not found: ${join(dir, 'missing.mnn')}`,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a backend this MNN cannot run is refused instead of falling back to CPU, with the right reason', async (t) => {
    const opencl = runtimeInfo().backends.find((b) => b.name === 'opencl');
    if (opencl?.usable) {
      t.pass('OpenCL is usable on this host; nothing to refuse');
      return;
    }
    const err = await t.throwsAsync(
      () => Llm.load(models.tinyLlm, { overrides: { backend_type: 'opencl' } }),
      {
        instanceOf: EngineError,
      },
    );
    t.is(err?.code, 'EBACKEND');
    // Compiled in but no GPU device (pocl) and not compiled in at all are different facts with different fixes.
    if (opencl?.compiledIn)
      t.regex(
        err!.message,
        /^MNN backend "opencl" requested for the LLM of .* is compiled in but cannot start on this device: .+; refusing to fall back to CPU silently$/,
      );
    else
      t.is(
        err?.message,
        `MNN backend "opencl" requested for the LLM of ${models.tinyLlm} is not compiled into this MNN build; refusing to fall back to CPU silently`,
      );
    await t.throwsAsync(() => Llm.load(models.tinyVlm, { overrides: { mllm: { backend_type: 'opencl' } } }), {
      message: /^MNN backend "opencl" requested for the vision\/audio encoder of /,
    });
    await t.throwsAsync(() => Llm.load(models.tinyLlm, { overrides: { backend_type: 'tpu' as 'cpu' } }), {
      message: `unknown MNN backend "tpu" for the LLM of ${models.tinyLlm} (known: cpu, metal, cuda, opencl, opengl, vulkan, npu, hexagon, musa)`,
    });
    await t.throwsAsync(
      () =>
        MnnGraph.load(models.sileroVad, {
          inputs: ['input', 'state', 'sr'],
          outputs: ['output', 'stateN'],
          backend: 'opencl',
        }),
      {
        message: opencl?.compiledIn
          ? /^MNN backend "opencl" requested for .*silero_vad\.mnn is compiled in but cannot start on this device: /
          : /^MNN backend "opencl" requested for .*silero_vad\.mnn cannot run: MNN built without opencl/,
      },
    );
  });

  test('bad load arguments are refused in JS', async (t) => {
    await t.throwsAsync(() => Llm.load(''), {
      message: 'Expected a path to an MNN LLM config.json for configPath but received ""',
    });
    await t.throwsAsync(() => Llm.load(models.tinyLlm, { overrides: [] as never }), {
      message: 'Expected an object of MNN config keys for overrides but received array(0)',
    });
    await t.throwsAsync(() => MnnGraph.load(models.sileroVad, { inputs: [], outputs: ['x'] }), {
      message: 'Expected a non-empty array of tensor names for inputs but received array(0)',
    });
  });

  test('the model stays healthy after refused requests', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    await t.throwsAsync(() => llm.eraseHistory(5, 100), {
      message: 'Llm.eraseHistory: range [5, 100) is outside the history of 0 tokens',
    });
    t.is((await llm.complete('Hello')).text, expectedOutput('tiny-llm').text);
  });
}
