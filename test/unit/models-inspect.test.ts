import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { MnnEdgeError } from '../../lib/errors.js';
import { backendGaps, inspectMnnBytes, inspectMnnFile, OP_COVERAGE_MNN_COMMIT } from '../../models/index.js';
import { modelFixturesDir } from '../helpers/paths.js';

const fixture = (p: string) => join(modelFixturesDir, p);

// The LLM decoder of the fixtures README: embedded tokens in, logits out, fused Attention with a KV cache.
const LLM_INPUTS = ['input_ids', 'position_ids', 'attention_mask', 'logits_index'];

test('tiny-llm: the decoder interface and op mix of the README, weights inline', (t) => {
  const r = inspectMnnFile(fixture('tiny-llm/llm.mnn'));
  t.deepEqual(
    r.inputs.map((i) => [i.name, i.dataType, i.shape?.length]),
    [
      ['input_ids', 'float32', 3],
      ['position_ids', 'int32', 2],
      ['attention_mask', 'float32', 4],
      ['logits_index', 'int32', 1],
    ],
  );
  t.is(r.inputs[0]!.shape![2], 64, 'hidden size 64');
  t.deepEqual(r.outputs, [{ name: 'logits' }]);
  // 2 layers → 2 fused Attention ops; 2 × (q,k,v,o,gate,up,down) + lm_head = 15 convolutions.
  t.is(r.opTypes['Attention'], 2);
  t.is(r.opTypes['Convolution'], 15);
  t.is(r.opTypes['Input'], 4);
  t.is(r.opCount, 176);
  t.is(r.externalWeights, undefined);
  t.deepEqual(r.weightQuantBits, {});
  t.deepEqual(r.weightQuantBlocks, {});
  t.deepEqual(r.backendGaps['cpu'], []);
  t.deepEqual(r.backendGaps['nnapi'], ['Attention']);
  t.is(r.coverageCommit, OP_COVERAGE_MNN_COMMIT);
});

test('tiny-llm-int4: 4-bit weights referenced in llm.mnn.weight with its exact size', (t) => {
  const r = inspectMnnFile(fixture('tiny-llm-int4/llm.mnn'));
  t.deepEqual(
    r.inputs.map((i) => i.name),
    LLM_INPUTS,
  );
  t.deepEqual(r.outputs, [{ name: 'logits' }]);
  t.is(r.opTypes['Attention'], 2);
  t.is(r.opTypes['Convolution'], 15);
  // --weightQuantBits 4 --weightQuantBlock 32, as the fixtures README says.
  t.deepEqual(r.weightQuantBits, { '4': 15 });
  t.deepEqual(r.weightQuantBlocks, { '32': 15 });
  t.deepEqual(r.externalWeights, { files: ['llm.mnn.weight'], ops: 15, bytes: 86346, extentBytes: 86346 });
  t.is(readFileSync(fixture('tiny-llm-int4/llm.mnn.weight')).length, 86346);
});

test('tiny-vlm visual.mnn: image [1,3,64,64] in, image_embeds out, a patch convolution', (t) => {
  const r = inspectMnnFile(fixture('tiny-vlm/visual.mnn'));
  t.deepEqual(r.inputs, [{ name: 'image', shape: [1, 3, 64, 64], dataType: 'float32', format: 'NCHW' }]);
  t.deepEqual(r.outputs, [{ name: 'image_embeds' }]);
  t.is(r.shapes, 'static');
  t.true((r.opTypes['Convolution'] ?? 0) >= 1);
  t.true(Object.values(r.backendGaps).every((g) => g.length === 0));
});

test('tiny-omni-audio audio.mnn: input_features [1,128,T], convs, pooling, audio_embeds out', (t) => {
  const r = inspectMnnFile(fixture('tiny-omni-audio/audio.mnn'));
  t.deepEqual(
    r.inputs.map((i) => [i.name, i.shape?.slice(0, 2)]),
    [['input_features', [1, 128]]],
  );
  t.deepEqual(r.outputs, [{ name: 'audio_embeds' }]);
  // Conv1d k3 s1, Conv1d k3 s2, Linear → 3 convolutions; AvgPool 2 → 1 pooling.
  t.is(r.opTypes['Convolution'], 3);
  t.is(r.opTypes['Pooling'], 1);
});

test('silero-vad: three inputs, two outputs, dynamic shapes and control-flow subgraphs', (t) => {
  const r = inspectMnnFile(fixture('silero-vad/silero_vad.mnn'));
  t.deepEqual(
    r.inputs.map((i) => [i.name, i.dataType]),
    [
      ['input', 'float32'],
      ['state', 'float32'],
      ['sr', 'int32'],
    ],
  );
  t.deepEqual(r.inputs[1]!.shape, [2, -1, 128]);
  t.deepEqual(
    r.outputs.map((o) => o.name),
    ['output', 'stateN'],
  );
  t.is(r.shapes, 'dynamic');
  t.is(r.sourceType, 'ONNX');
  t.is(r.bizCode, 'MNN');
  t.true(r.subgraphs.length > 0);
  t.true((r.opTypes['If'] ?? 0) > 0);
  t.true((r.opTypes['LSTM'] ?? 0) > 0);
  t.deepEqual(r.backendGaps['cpu'], [], 'If runs as submodules, LSTM on the CPU');
});

test('backendGaps: ops no backend runs are never reported; unknown ops are reported everywhere', (t) => {
  const gaps = backendGaps(['Input', 'Const', 'unknown(9999)']);
  t.deepEqual(gaps['cpu'], ['unknown(9999)']);
  t.deepEqual(gaps['opencl'], ['unknown(9999)']);
});

// Deterministic PRNG so a failure reproduces.
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x100000000;
  };
}

function expectCleanOutcome(t: import('ava').ExecutionContext, bytes: Uint8Array, what: string): void {
  try {
    inspectMnnBytes(bytes, what);
  } catch (err) {
    if (!(err instanceof MnnEdgeError) || err.code !== 'EMNNFORMAT') {
      t.fail(`${what}: unexpected ${(err as Error).name}: ${(err as Error).message}`);
      return;
    }
    t.true(err.message.startsWith(`${what} is not a valid .mnn model (truncated or corrupt): `), err.message);
  }
}

test('fuzz: truncations, bit flips and random bytes give a clear error or a report, never a crash', (t) => {
  const rand = prng(0x6d6e6e);
  for (const name of ['tiny-llm-int4/llm.mnn', 'tiny-vlm/visual.mnn', 'silero-vad/silero_vad.mnn']) {
    const good = readFileSync(fixture(name));
    for (let i = 0; i < 60; i++) {
      const cut = Math.floor(rand() * good.length);
      expectCleanOutcome(t, good.subarray(0, cut), `${name} cut at ${cut}`);
    }
    for (let i = 0; i < 60; i++) {
      const flipped = Buffer.from(good);
      for (let k = 0; k < 8; k++) flipped[Math.floor(rand() * flipped.length)] = Math.floor(rand() * 256);
      expectCleanOutcome(t, flipped, `${name} flip ${i}`);
    }
  }
  for (let i = 0; i < 200; i++) {
    const bytes = Buffer.alloc(Math.floor(rand() * 4096));
    for (let k = 0; k < bytes.length; k++) bytes[k] = Math.floor(rand() * 256);
    expectCleanOutcome(t, bytes, `random ${i}`);
  }
  t.throws(() => inspectMnnBytes(new Uint8Array(3), 'tiny.mnn'), {
    message: 'tiny.mnn is not a valid .mnn model (truncated or corrupt): only 3 bytes',
  });
});

test('a truncated real model names the problem and the file', (t) => {
  const good = readFileSync(fixture('tiny-llm/llm.mnn'));
  const err = t.throws(() => inspectMnnBytes(good.subarray(0, 1000), 'llm.mnn'));
  t.regex(
    err.message,
    /^llm\.mnn is not a valid \.mnn model \(truncated or corrupt\): .+ lies outside the 1000-byte file$/,
  );
  t.throws(() => inspectMnnFile(fixture('tiny-llm/does-not-exist.mnn')), {
    message: /^Cannot read .*does-not-exist\.mnn: ENOENT/,
  });
});
