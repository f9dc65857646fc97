// Real GPU backends through engine hosts: Vulkan (lavapipe here, a Mali/Adreno driver on a board) and OpenCL.
// Vulkan tests run when the installed MNN has Vulkan and a Vulkan device answers; otherwise one line says why.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { EngineHostClient, engineAvailability } from '../../engine/index.js';
import type { BackendProbeResult } from '../../engine/src/native.js';
import { createMemoryLogger } from '../../lib/log.js';
import { skipWithLine } from '../helpers/skip.js';
import { engineOrSkip, expectedOutput, models } from './_engine.js';

function probeOf(name: 'vulkan' | 'opencl'): BackendProbeResult | undefined {
  const a = engineAvailability();
  return a.available ? a.info.probes?.find((p) => p.name === name) : undefined;
}

function scratch(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'backends-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

if (engineOrSkip(test, 'GPU backends')) {
  const vulkan = probeOf('vulkan');
  const vulkanReady = vulkan?.steps.every((s) => s.status !== 'fail') && vulkan.compiledIn;
  if (!vulkanReady) {
    const why = !vulkan
      ? 'the addon has no probeBackend'
      : (vulkan.steps.find((s) => s.status === 'fail')?.detail ?? 'not compiled in');
    skipWithLine(`SKIP Vulkan engine tests: ${why}`);
  } else {
    test('tiny-llm on vulkan gives exactly the recorded CPU text; the kernel cache goes to tmp_path, not the cwd', async (t) => {
      const cwd = scratch(t);
      const cache = scratch(t);
      const host = await EngineHostClient.start({ name: 'vk', logger: createMemoryLogger(), cwd });
      try {
        await host.load(models.tinyLlm, { backend_type: 'vulkan', tmp_path: cache });
        const r = await host.complete('Hello');
        t.is(r.text, expectedOutput('tiny-llm').text);
      } finally {
        t.deepEqual(await host.close(), { code: 0, signal: null });
      }
      t.false(existsSync(join(cwd, 'mnn_cachefile.bin')), readdirSync(cwd).join(', '));
      t.true(existsSync(join(cache, 'mnn_cachefile.bin')), readdirSync(cache).join(', '));
    });

    test('a host whose VK_ICD_FILENAMES points at nothing refuses vulkan with the failed step, never runs on CPU', async (t) => {
      const host = await EngineHostClient.start({
        name: 'vk-gone',
        logger: createMemoryLogger(),
        env: { ...process.env, VK_ICD_FILENAMES: '/nonexistent/icd.json' },
        cwd: scratch(t),
      });
      try {
        const info = await host.runtimeInfo();
        t.true(info.available);
        const probe = info.available ? info.info.probes?.find((p) => p.name === 'vulkan') : undefined;
        t.is(probe?.compiledIn, true);
        t.regex(probe?.steps.find((s) => s.status === 'fail')?.detail ?? '', /^vkCreateInstance failed/);
        const err = await t.throwsAsync(host.load(models.tinyLlm, { backend_type: 'vulkan' }));
        t.is((err as { code?: string }).code, 'EBACKEND');
        t.regex(
          err!.message,
          /^MNN backend "vulkan" requested for the LLM of .* is compiled in but cannot start on this device: vkCreateInstance failed .*VK_ICD_FILENAMES=\/nonexistent\/icd\.json/,
        );
      } finally {
        await host.close();
      }
    });
  }

  const opencl = probeOf('opencl');
  if (opencl?.compiledIn && opencl.steps.some((s) => s.status === 'fail')) {
    test('opencl compiled in but without a GPU device: refused with that reason, not "not compiled in"', async (t) => {
      const host = await EngineHostClient.start({
        name: 'cl',
        logger: createMemoryLogger(),
        cwd: scratch(t),
      });
      try {
        const err = await t.throwsAsync(host.load(models.tinyLlm, { backend_type: 'opencl' }));
        t.is((err as { code?: string }).code, 'EBACKEND');
        t.notRegex(err!.message, /not compiled/);
        t.regex(err!.message, /is compiled in but cannot start on this device: /);
        t.is(err!.message.includes(opencl.steps.find((s) => s.status === 'fail')!.detail), true);
      } finally {
        await host.close();
      }
    });
  } else {
    skipWithLine(
      `SKIP OpenCL refusal test: ${opencl ? 'OpenCL initialises here (a GPU device answers)' : 'MNN has no OpenCL'}`,
    );
  }
}
