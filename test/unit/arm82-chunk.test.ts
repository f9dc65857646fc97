// The Arm82 prefill-chunk rule (engine/src/llm-options.ts): on arm64, a text decoder on the CPU backend at `low`
// gets MNN's prefill chunk, so that conversation KV reuse stays exact (kept KV ends on a chunk boundary); nowhere
// else, never for a model with vision or audio, and never over a chunk the config or the caller set.
import test from 'ava';
import {
  ARM82_PREFILL_CHUNK,
  archSafeOverrides,
  arm82ExactChunk,
  prefillChunkOf,
} from '../../engine/src/llm-options.js';

test('arm64, CPU backend, precision low (MNN default): the chunk is set', (t) => {
  t.deepEqual(arm82ExactChunk({ backend_type: 'cpu', precision: 'low' }, 'arm64'), {
    chunk: ARM82_PREFILL_CHUNK,
  });
  t.deepEqual(arm82ExactChunk({}, 'arm64'), { chunk: ARM82_PREFILL_CHUNK });
});

test('other precisions, backends and architectures: nothing changes', (t) => {
  t.is(arm82ExactChunk({ precision: 'normal' }, 'arm64'), undefined);
  t.is(arm82ExactChunk({ backend_type: 'opencl', precision: 'low' }, 'arm64'), undefined);
  t.is(arm82ExactChunk({ precision: 'low' }, 'x64'), undefined);
  t.is(arm82ExactChunk({ precision: 'low' }, 'riscv64'), undefined);
});

test('an Omni model (vision, audio, a talker) keeps whole prefills (MNN hands media to each prefill call from the first)', (t) => {
  t.is(arm82ExactChunk({ is_visual: true }, 'arm64'), undefined);
  t.is(arm82ExactChunk({ is_audio: true }, 'arm64'), undefined);
  t.is(arm82ExactChunk({ has_talker: true }, 'arm64'), undefined);
});

test('a chunk already in the config or the overrides is kept, 0 (none) included', (t) => {
  t.is(arm82ExactChunk({ chunk: 0 }, 'arm64'), undefined);
  t.is(arm82ExactChunk({ chunk: 128 }, 'arm64'), undefined);
  t.is(arm82ExactChunk({ chunk_limits: [128, 1] }, 'arm64'), undefined);
});

test('archSafeOverrides adds the chunk beside the safe sampler, and not with reuse_kv off', (t) => {
  const extra = archSafeOverrides({ reuse_kv: true }, {}, 'arm64');
  t.is(extra?.chunk, ARM82_PREFILL_CHUNK);
  t.is(extra?.sampler_type, 'mixed');
  t.is(archSafeOverrides({ reuse_kv: false }, {}, 'arm64')?.chunk, undefined);
  t.is(archSafeOverrides({ reuse_kv: true }, {}, 'x64'), undefined);
});

test('prefillChunkOf: chunk, else the largest of chunk_limits, else 0', (t) => {
  t.is(prefillChunkOf({ chunk: 32 }), 32);
  t.is(prefillChunkOf({ chunk_limits: [1, 128, 64] }), 128);
  t.is(prefillChunkOf({ chunk_limits: [128] }), 0); // MNN ignores a list of one
  t.is(prefillChunkOf({ chunk: 0 }), 0);
  t.is(prefillChunkOf({ chunk: -4 }), 0);
  t.is(prefillChunkOf({ chunk: 'x' }), 0);
  t.is(prefillChunkOf({}), 0);
});
