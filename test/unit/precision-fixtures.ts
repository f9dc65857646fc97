// Measured-looking fp16/fp32 CPU speeds per fixture board, for the precision tests (plan-precision.test.ts).
//
// Where the numbers come from, honestly: the board-support profiles carry one CPU figure, QCS9075's (MNN 3.6.1,
// Qwen3.5-2B W4A16: prefill 78.15, decode 33.30 tok/s, board-support/profiles/qualcomm.ts). The profile does not
// state the precision; MNN's LLM config defaults to "low", which is fp16 on that CPU, so it stands in for the
// fp16 probe. Every other figure below is a TEST INPUT: plausible for the core and memory of each board (fp16
// helps prefill most; decode is bound by memory bandwidth, so its gain is smaller, and on the Pi 5 it is within
// noise), chosen so that each board exercises one side of the 1.1× rule. None of them was measured by us.
import type { ModelKind } from '../../agent/plan/types.js';

export interface PrecisionSpeeds {
  prefillTokPerSec: number;
  decodeTokPerSec: number;
}

export interface BoardPrecisionFixture {
  /** Directory under shared/fixtures/soc. */
  dir: string;
  /** RAM when the fixture tree has no /proc/meminfo (vendor spec sheets). */
  ramBytes: number;
  kind: ModelKind;
  model: string;
  fp16: PrecisionSpeeds;
  fp32: PrecisionSpeeds;
  source: string;
  /** What the rule must choose from these numbers, and the speedup it must report (fp32 ÷ fp16 reference time). */
  expect: { precision: 'low' | 'normal'; speedup: string };
}

const GiB = 1024 * 1024 * 1024;

export const boardPrecision: BoardPrecisionFixture[] = [
  {
    dir: 'qcom-qcs9075-iq9075-evk',
    ramBytes: 36 * GiB,
    kind: 'vlm',
    model: 'Qwen3.5-2B W4A16',
    fp16: { prefillTokPerSec: 78.15, decodeTokPerSec: 33.3 },
    fp32: { prefillTokPerSec: 41.0, decodeTokPerSec: 24.6 },
    source:
      'fp16: the QCS9075 profile prior (seed measurement, MNN 3.6.1 default precision); fp32: test input',
    // vlm reference request 320 + 32: fp16 320/78.15 + 32/33.3 = 5.06 s, fp32 320/41 + 32/24.6 = 9.11 s
    expect: { precision: 'low', speedup: '1.80' },
  },
  {
    dir: 'rockchip-rk3588-rock5b',
    ramBytes: 16 * GiB,
    kind: 'llm',
    model: 'Qwen2.5-1.5B W4A16, 4 threads on the A76 cluster',
    fp16: { prefillTokPerSec: 62.0, decodeTokPerSec: 13.8 },
    fp32: { prefillTokPerSec: 33.5, decodeTokPerSec: 10.9 },
    source: 'test input',
    // llm reference request 128 + 64: 6.70 s vs 9.69 s
    expect: { precision: 'low', speedup: '1.45' },
  },
  {
    dir: 'nvidia-jetson-orin-nano-super',
    ramBytes: 8 * GiB,
    kind: 'llm',
    model: 'Qwen2.5-1.5B W4A16, 6 × A78AE',
    fp16: { prefillTokPerSec: 55.0, decodeTokPerSec: 12.5 },
    fp32: { prefillTokPerSec: 30.0, decodeTokPerSec: 9.6 },
    source: 'test input',
    // 7.45 s vs 10.93 s
    expect: { precision: 'low', speedup: '1.47' },
  },
  {
    dir: 'rpi5-bcm2712',
    ramBytes: 8 * GiB,
    kind: 'llm',
    model: 'Qwen2.5-1.5B W4A16, 4 × A76 on LPDDR4X',
    fp16: { prefillTokPerSec: 40.0, decodeTokPerSec: 8.4 },
    fp32: { prefillTokPerSec: 37.5, decodeTokPerSec: 8.2 },
    source: 'test input',
    // 10.82 s vs 11.22 s: fp16 is faster, but not by the margin
    expect: { precision: 'normal', speedup: '1.04' },
  },
];

/** Boards whose CPU has no fp16 candidate, with the reason's architecture. */
export const noFp16Boards: Array<{ dir: string; ramBytes: number; arch: string }> = [
  { dir: 'spacemit-k1-bpi-f3', ramBytes: 4 * GiB, arch: 'riscv64' },
  { dir: 'spacemit-k3-com260', ramBytes: 16 * GiB, arch: 'riscv64' },
  { dir: 'starfive-jh7110-visionfive2', ramBytes: 4 * GiB, arch: 'riscv64' },
  { dir: 'x86_64-devhost-zen5', ramBytes: 64 * GiB, arch: 'x86_64' },
];
