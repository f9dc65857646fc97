// The encoder-precision rule (engine/src/llm-options.ts): on arm64 a vision/audio encoder never runs on MNN's
// Arm82 fp16 backend (heap corruption at the pinned MNN, docs/ENGINE.md); the decoder's precision is untouched
// and other architectures keep what was asked.
import test from 'ava';
import { encoderPrecision } from '../../engine/index.js';

test('on arm64 an encoder asked for low runs at normal', (t) => {
  t.is(encoderPrecision('low', 'arm64'), 'normal');
});

test('on arm64 normal and high stay as asked, and an unset precision stays unset', (t) => {
  t.is(encoderPrecision('normal', 'arm64'), 'normal');
  t.is(encoderPrecision('high', 'arm64'), 'high');
  t.is(encoderPrecision(undefined, 'arm64'), undefined);
});

test('on x86-64 and riscv64 low stays low (no Arm82 backend there)', (t) => {
  t.is(encoderPrecision('low', 'x64'), 'low');
  t.is(encoderPrecision('low', 'riscv64'), 'low');
});
