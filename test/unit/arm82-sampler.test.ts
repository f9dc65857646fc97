// The Arm82 sampler rule (engine/src/llm-options.ts): on arm64, a decoder on the CPU backend at `low` with MNN's
// greedy sampler gets a `mixed` sampler of greedy alone, which picks the same token from a host copy of the
// logits instead of copying them across backends into a freed buffer (MNN 4d40bdbd7); everything else is left
// as configured.
import test from 'ava';
import { arm82SafeSampler } from '../../engine/index.js';

const safe = { sampler_type: 'mixed', mixed_samplers: ['greedy'] };

test('arm64, CPU, low, greedy: the mixed sampler of greedy alone', (t) => {
  t.deepEqual(
    arm82SafeSampler({ backend_type: 'cpu', precision: 'low', sampler_type: 'greedy' }, 'arm64'),
    safe,
  );
});

test("MNN's defaults (no backend, precision or sampler in the config) are CPU, low and greedy", (t) => {
  t.deepEqual(arm82SafeSampler({}, 'arm64'), safe);
});

test('fp32 precisions, other backends and other samplers keep their config on arm64', (t) => {
  t.is(arm82SafeSampler({ precision: 'normal' }, 'arm64'), undefined);
  t.is(arm82SafeSampler({ precision: 'high' }, 'arm64'), undefined);
  t.is(arm82SafeSampler({ backend_type: 'opencl', precision: 'low' }, 'arm64'), undefined);
  t.is(
    arm82SafeSampler({ sampler_type: 'mixed', mixed_samplers: ['topK', 'temperature'] }, 'arm64'),
    undefined,
  );
});

test('x86-64 and riscv64 have no Arm82 backend: nothing changes', (t) => {
  t.is(arm82SafeSampler({ precision: 'low' }, 'x64'), undefined);
  t.is(arm82SafeSampler({ precision: 'low' }, 'riscv64'), undefined);
});
