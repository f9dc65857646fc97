import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  compareSemver,
  deriveManifest,
  hashFile,
  listPackageDir,
  type ModelManifest,
  type ModelTask,
  parseManifest,
} from '../../models/index.js';
import { modelFixturesDir } from '../helpers/paths.js';

async function filesOf(dir: string) {
  return Promise.all(
    listPackageDir(dir).map(async (path) => ({ path, ...(await hashFile(join(dir, path))) })),
  );
}

const valid: ModelManifest = {
  schemaVersion: 1,
  id: 'qwen2.5-0.5b',
  version: '1.2.3-rc.1',
  task: 'llm',
  family: 'qwen2',
  license: 'Apache-2.0',
  variants: [
    {
      name: 'qnn-w4a16',
      requirements: {
        backend: 'qnn',
        minHexagonArch: 73,
        minRamBytes: 2 * 1024 ** 3,
        minMnnVersion: '3.2.0',
        engineFeatures: ['llm'],
      },
      precision: { weights: 'int4', activations: 'fp16', quantBlock: 64, symmetric: true, label: 'W4A16' },
      files: [{ path: 'llm.mnn', length: 10, sha256: 'a'.repeat(64) }],
      memory: { weightsBytes: 10, kvCacheBytes: 100, contextLength: 4096 },
      configOverrides: { backend_type: 'qnn' },
    },
  ],
};

test('a complete manifest passes', (t) => {
  t.deepEqual(parseManifest(valid, 'm.json'), valid);
});

test('schema errors name the path and what was expected', (t) => {
  const bad = structuredClone(valid) as unknown as { variants: Record<string, unknown>[] } & Record<
    string,
    unknown
  >;
  bad['id'] = 'Qwen 2';
  bad.variants[0]!['files'] = [{ path: '../llm.mnn', length: -1, sha256: 'xyz' }];
  t.throws(() => parseManifest(bad, 'm.json'), {
    message:
      'Invalid manifest m.json: id: expected a string matching /^[a-z0-9][a-z0-9._-]{0,63}$/, got "Qwen 2"; ' +
      'variants[0].files[0].path: expected a string matching /^(?!.*(^|/)\\.{1,2}(/|$))[A-Za-z0-9_.+@-][A-Za-z0-9_.+@/-]{0,254}$/, got "../llm.mnn"; ' +
      'variants[0].files[0].length: expected a number >= 0, got -1; ' +
      'variants[0].files[0].sha256: expected a string matching /^[0-9a-f]{64}$/, got "xyz"',
  });
  const missing = { ...valid, variants: [{ ...valid.variants[0]!, requirements: { backend: 'tpu' } }] };
  t.throws(() => parseManifest(missing, 'm.json'), {
    message:
      /^Invalid manifest m\.json: variants\[0\]\.requirements\.backend: expected one of "cpu", "opencl", .*, got "tpu"$/,
  });
});

test('rules beyond the schema: unique variant names, one hash per path', (t) => {
  const twice = { ...valid, variants: [valid.variants[0]!, valid.variants[0]!] };
  t.throws(() => parseManifest(twice, 'm.json'), {
    message: 'Invalid manifest m.json: variants[1].name: duplicate variant "qnn-w4a16"',
  });
  const other = {
    ...valid.variants[0]!,
    name: 'cpu',
    files: [{ path: 'llm.mnn', length: 11, sha256: 'b'.repeat(64) }],
  };
  t.throws(() => parseManifest({ ...valid, variants: [valid.variants[0]!, other] }, 'm.json'), {
    message: 'Invalid manifest m.json: file llm.mnn is listed with different lengths or hashes',
  });
});

test('semver ordering, pre-releases before releases', (t) => {
  t.deepEqual(['1.10.0', '1.2.0', '1.2.0-rc.1', '0.9.9', '1.2.0-alpha'].sort(compareSemver), [
    '0.9.9',
    '1.2.0-alpha',
    '1.2.0-rc.1',
    '1.2.0',
    '1.10.0',
  ]);
});

test('derives manifests from the fixtures: task, engine features, precision, external weights, KV estimate', async (t) => {
  const cases: [string, ModelTask, string[], string][] = [
    ['tiny-llm', 'llm', ['llm'], 'fp32'],
    ['tiny-llm-int4', 'llm', ['llm'], 'int4'],
    ['tiny-vlm', 'vlm', ['llm', 'omni', 'vision'], 'fp32'],
    ['tiny-omni-audio', 'omni', ['audio', 'llm', 'omni'], 'fp32'],
  ];
  for (const [name, task, features, weights] of cases) {
    const dir = join(modelFixturesDir, name);
    const m = deriveManifest(dir, await filesOf(dir), { id: name });
    t.is(m.task, task, name);
    t.is(m.version, '0.0.0');
    t.is(m.derived?.from, 'mnn-export');
    t.true(m.derived!.assumptions.includes('version 0.0.0: the export names none'));
    const v = m.variants[0]!;
    t.deepEqual(v.requirements, { backend: 'cpu', engineFeatures: features }, name);
    t.is(v.precision.weights, weights, name);
    if (weights === 'int4')
      t.deepEqual(v.precision, { weights: 'int4', activations: 'fp32', quantBlock: 32, label: 'W4A32' });
    // hidden 64, 2 layers, K+V at fp16, max_position_embeddings 2048.
    t.deepEqual(v.memory.kvCacheBytes, 2 * 2 * 64 * 2048 * 2, name);
    t.is(v.memory.contextLength, 2048);
    t.true(
      v.files.some((f) => f.path === 'llm.mnn.weight'),
      'the weight file is listed even when empty',
    );
  }
  const vad = join(modelFixturesDir, 'silero-vad');
  const m = deriveManifest(vad, await filesOf(vad), { id: 'silero-vad', version: '5.0.0' });
  t.is(m.task, 'vad');
  t.deepEqual(m.variants[0]!.requirements, { backend: 'cpu' });
  t.is(m.variants[0]!.memory.kvCacheBytes, undefined);
});

test('derivation refuses what it cannot tell', (t) => {
  t.throws(
    () => deriveManifest('/nowhere', [{ path: 'README.md', length: 1, sha256: 'a'.repeat(64) }], { id: 'x' }),
    {
      message: 'Cannot derive a manifest for /nowhere: it has no .mnn file and no mnn-edge.json',
    },
  );
  const visual = join(modelFixturesDir, 'tiny-vlm');
  t.throws(
    () =>
      deriveManifest(visual, [{ path: 'visual.mnn', length: 216188, sha256: 'a'.repeat(64) }], { id: 'x' }),
    {
      message: `Cannot derive the task of ${visual} from its files; pass one of llm, vlm, omni, asr, tts, vad, wake, vision, embedding`,
    },
  );
  const ok = deriveManifest(visual, [{ path: 'visual.mnn', length: 216188, sha256: 'a'.repeat(64) }], {
    id: 'x',
    task: 'vision',
  });
  t.is(ok.task, 'vision');
});

test('an export with has_talker is derived as a tts model on the omni engine', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-talker-export-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const tinyLlm = join(modelFixturesDir, 'tiny-llm');
  for (const f of ['config.json', 'llm.mnn', 'llm.mnn.weight', 'embeddings_bf16.bin', 'tokenizer.txt'])
    copyFileSync(join(tinyLlm, f), join(dir, f));
  const llmConfig = JSON.parse(readFileSync(join(tinyLlm, 'llm_config.json'), 'utf8')) as object;
  writeFileSync(join(dir, 'llm_config.json'), JSON.stringify({ ...llmConfig, has_talker: true }));
  const m = deriveManifest(dir, await filesOf(dir), { id: 'talker' });
  t.is(m.task, 'tts');
  t.deepEqual(m.variants[0]!.requirements.engineFeatures, ['llm', 'omni']);
});
