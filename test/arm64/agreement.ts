// Our engine on the board's instruction set, against MNN itself: every fixture case (tiny-llm fp32 and int4,
// tiny-vlm with its images, tiny-omni-audio with its WAVs) at precision "normal" (fp32, NEON) and "low" (the Arm82
// fp16 backend where the CPU has fp16 arithmetic) must give exactly the text the same cross-build's llm_demo
// gave. The x86 recording is compared token by token through the margin rule (test/helpers/margin-rule.ts): at
// fp32 it must hold; fp16 is a different result by design, so there the agreement is reported, not asserted.
// Each case says which MNN kernel family ran. The tier script writes the references (test/arm64/references.ts).
// One test file per model and precision (agreement-<model>-<precision>.test.ts), so each runs in its own process,
// as in the product, where every loaded instance has its own engine host and a precision change starts a new one;
// the precision is asked the way a host asks it (the decoder's; the encoder keeps its own, see encoderPrecision).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { Llm } from '../../engine/index.js';
import { engineOrSkip, llmDemoText } from '../engine/_engine.js';
import type { Precision } from '../helpers/llm-demo.js';
import { compareWithMargins } from '../helpers/margin-rule.js';
import { modelFixturesDir, repoRoot } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';
import { promptOf, type ReferenceFile, recordedCases } from './references.js';

interface DeviceSupports {
  i8sdot: boolean;
  fp16: boolean;
  i8mm: boolean;
  sve2: boolean;
  sme2: boolean;
}

/** MNN's "The device supports: i8sdot:1, fp16:1, i8mm: 1, sve2: 1, sme2: 0" line, as flags. */
function parseDeviceSupports(line: string | undefined): DeviceSupports | undefined {
  if (line === undefined) return undefined;
  const flag = (name: string) => new RegExp(`${name}:\\s*1`).test(line);
  return {
    i8sdot: flag('i8sdot'),
    fp16: flag('fp16'),
    i8mm: flag('i8mm'),
    sve2: flag('sve2'),
    sme2: flag('sme2'),
  };
}

/** Which of MNN's CPU kernel families a case runs on, from MNN's own CPU report and the precision asked. */
function kernelFamily(cpu: DeviceSupports | undefined, precision: string, quantized: boolean): string {
  if (cpu === undefined) return 'unknown (MNN printed no CPU report)';
  const backend =
    precision === 'low' && cpu.fp16 ? 'Arm82 backend (fp16 arithmetic)' : 'CPU backend, fp32 NEON kernels';
  const gemm = quantized
    ? `; int4 weights through ${[cpu.i8sdot && 'sdot', cpu.i8mm && 'i8mm'].filter(Boolean).join('+') || 'plain int8'} GEMM`
    : '';
  return `${backend}${gemm}`;
}

/** Registers the agreement test of one fixture model at one precision in the calling test file. */
export function agreementTests(model: string, precision: Precision): void {
  const referencesPath = process.env['MNN_EDGE_ARM64_REFERENCES'];
  if (process.arch !== 'arm64' || referencesPath === undefined) {
    skipWithLine(
      `SKIP arm64 engine agreement: ${process.arch !== 'arm64' ? `this Node is ${process.arch}` : 'MNN_EDGE_ARM64_REFERENCES is not set'} (run it with npm run test:arm64)`,
    );
  } else if (engineOrSkip(test, 'arm64 engine agreement')) {
    const references = JSON.parse(readFileSync(referencesPath, 'utf8')) as ReferenceFile;
    const cpu = parseDeviceSupports(references.deviceSupports);
    const report: Array<Record<string, unknown>> = [];
    test.serial(
      `${model} at precision ${precision}: our engine gives MNN's own text on every case`,
      async (t) => {
        const config = join(modelFixturesDir, model, 'config.json');
        await using llm = await Llm.load(config, { overrides: { precision } });
        for (const recorded of recordedCases().filter((c) => c.model === model)) {
          const media = recorded.image ?? recorded.audio;
          const name = `${model}${media ? ` + ${media}` : ''} @ ${precision}`;
          const reference = references.cases.find(
            (r) => r.model === model && r.prompt === recorded.prompt && r.precision === precision,
          );
          if (reference === undefined) return t.fail(`no reference for ${name}`);
          // Each case starts from an empty KV cache, as llm_demo's single prompt does.
          await llm.reset();
          const result = await llm.complete(promptOf(recorded), { mediaTags: true, reusePrefix: false });
          t.is(llmDemoText(result.text, result.finishReason), reference.text, `${name}: against llm_demo`);
          t.is(result.stats.promptTokens, reference.promptTokens, `${name}: prompt tokens`);
          t.is(result.stats.generatedTokens, reference.decodeTokens, `${name}: decode tokens`);
          const ids = [...(result.stats.outputIds ?? [])];
          const verdict = compareWithMargins(recorded, ids);
          const family = kernelFamily(cpu, precision, model.includes('int4'));
          if (precision === 'normal')
            t.true(verdict.ok, `${name} against the x86 recording: ${verdict.summary}`);
          t.log(`${name}: = llm_demo (same build); x86 recording: ${verdict.summary}; kernels: ${family}`);
          report.push({
            case: name,
            sameBuild: 'identical',
            x86: verdict.summary,
            agreed: verdict.agreed,
            total: verdict.total,
            kernels: family,
          });
        }
      },
    );

    test.after.always(() => {
      const dir = join(repoRoot, 'test-artifacts');
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, `arm64-agreement-${model}-${precision}.json`),
        JSON.stringify({ deviceSupports: references.deviceSupports, cases: report }, null, 1),
      );
    });
  }
}
