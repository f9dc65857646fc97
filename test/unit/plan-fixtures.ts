// Plain-value boards and catalog for the planner tests. Board RAM and clusters follow the fixture trees under
// shared/fixtures/soc (meminfo, cpufreq); priors are illustrative numbers in the shape board-support gives.
import type {
  BackendAvailability,
  BackendType,
  CatalogModel,
  PlanBoard,
  ProbeResult,
  SlotSpec,
} from '../../agent/plan/types.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

function backends(available: BackendType[], missing: Record<string, string> = {}): BackendAvailability[] {
  return [
    ...available.map((b) => ({ backend: b, available: true, reason: `${b} runtime found` })),
    ...Object.entries(missing).map(([b, reason]) => ({
      backend: b as BackendType,
      available: false,
      reason,
    })),
  ];
}

export const boards = {
  qcs9075: {
    boardId: 'qcs9075',
    ramBytes: 36 * GiB,
    cpuClusters: [
      { name: 'gold', cpus: [4, 5, 6, 7], maxFreqKHz: 2_553_600 },
      { name: 'silver', cpus: [0, 1, 2, 3], maxFreqKHz: 2_035_200 },
    ],
    backends: backends(['cpu', 'opencl', 'npu', 'hexagon']),
    // The seed measurement: on QCS9075 the CPU beat Hexagon and OpenCL for a 2B VLM.
    priors: [
      {
        backend: 'cpu',
        prefillTokPerSec: 60,
        decodeTokPerSec: 9.8,
        refWeightBytes: 1400 * MiB,
        source: 'qcs9075 Qwen2-VL-2B int4',
      },
      {
        backend: 'npu',
        prefillTokPerSec: 45,
        decodeTokPerSec: 7.1,
        refWeightBytes: 1400 * MiB,
        source: 'qcs9075 Qwen2-VL-2B int4',
      },
      {
        backend: 'opencl',
        prefillTokPerSec: 38,
        decodeTokPerSec: 5.2,
        refWeightBytes: 1400 * MiB,
        source: 'qcs9075 Qwen2-VL-2B int4',
      },
    ],
  },
  k1: {
    boardId: 'spacemit-k1',
    ramBytes: 3_898_372 * 1024,
    cpuClusters: [{ name: 'x60', cpus: [0, 1, 2, 3, 4, 5, 6, 7], maxFreqKHz: 1_600_000 }],
    backends: backends(['cpu'], { opencl: 'no OpenCL ICD (PowerVR BXE-2-32 driver not installed)' }),
    priors: [],
  },
  x86: {
    boardId: 'x86-64',
    ramBytes: 64 * GiB,
    cpuClusters: [{ name: 'zen5', cpus: [0, 1, 2, 3, 4, 5, 6, 7], maxFreqKHz: 5_752_000 }],
    backends: backends(['cpu'], { opencl: 'no libOpenCL.so', cuda: 'no libcuda.so' }),
    priors: [],
  },
  rpi5: {
    boardId: 'arm64-generic',
    ramBytes: 8_242_176 * 1024,
    cpuClusters: [{ name: 'a76', cpus: [0, 1, 2, 3], maxFreqKHz: 2_400_000 }],
    backends: backends(['cpu', 'vulkan']),
    priors: [],
  },
} satisfies Record<string, PlanBoard>;

export const catalog: CatalogModel[] = [
  {
    id: 'qwen2.5-1.5b',
    version: '1.0.0',
    kind: 'llm',
    variants: [
      {
        variantId: 'int4',
        quant: 'int4',
        weightBytes: 1000 * MiB,
        kvBytesPerToken: 28 * 1024,
        backends: ['cpu', 'opencl', 'npu'],
        configPath: '/m/qwen2.5-1.5b/int4/config.json',
      },
      {
        variantId: 'int8',
        quant: 'int8',
        weightBytes: 1800 * MiB,
        kvBytesPerToken: 28 * 1024,
        backends: ['cpu', 'opencl'],
        configPath: '/m/qwen2.5-1.5b/int8/config.json',
      },
    ],
  },
  {
    id: 'qwen2.5-0.5b',
    version: '1.0.0',
    kind: 'llm',
    variants: [
      {
        variantId: 'int4',
        quant: 'int4',
        weightBytes: 400 * MiB,
        kvBytesPerToken: 12 * 1024,
        backends: ['cpu', 'opencl'],
        configPath: '/m/qwen2.5-0.5b/int4/config.json',
      },
    ],
  },
  {
    id: 'qwen2-vl-2b',
    version: '1.0.0',
    kind: 'vlm',
    variants: [
      {
        variantId: 'int4',
        quant: 'int4',
        weightBytes: 1400 * MiB,
        kvBytesPerToken: 28 * 1024,
        backends: ['cpu', 'opencl', 'npu'],
        configPath: '/m/qwen2-vl-2b/int4/config.json',
      },
    ],
  },
  {
    id: 'qwen2-vl-2b',
    version: '1.1.0',
    kind: 'vlm',
    variants: [
      {
        variantId: 'int4',
        quant: 'int4',
        weightBytes: 1400 * MiB,
        kvBytesPerToken: 28 * 1024,
        backends: ['cpu', 'opencl', 'npu'],
        configPath: '/m/qwen2-vl-2b-1.1/int4/config.json',
      },
    ],
  },
  {
    id: 'sensevoice-small',
    version: '1.0.0',
    kind: 'asr',
    variants: [
      {
        variantId: 'int8',
        quant: 'int8',
        weightBytes: 240 * MiB,
        kvBytesPerToken: 0,
        backends: ['cpu'],
        configPath: '/m/sensevoice/config.json',
      },
    ],
  },
  {
    id: 'cosyvoice-300m',
    version: '1.0.0',
    kind: 'tts',
    variants: [
      {
        variantId: 'int8',
        quant: 'int8',
        weightBytes: 320 * MiB,
        kvBytesPerToken: 8 * 1024,
        backends: ['cpu'],
        configPath: '/m/cosyvoice/config.json',
      },
    ],
  },
];

export function slot(
  name: SlotSpec['slot'],
  use: SlotSpec['use'],
  priority: number,
  extra: Partial<SlotSpec> = {},
): SlotSpec {
  return { slot: name, use, priority, contextTokens: 2048, enabled: true, ...extra };
}

/** The voice + vision appliance: one VLM for both the conversation and the camera. */
export const applianceSlots: SlotSpec[] = [
  slot('voice.vad', { builtin: 'energy-vad' }, 100),
  slot('voice.asr', { model: { id: 'sensevoice-small' } }, 90),
  slot('voice.llm', { model: { id: 'qwen2-vl-2b' } }, 80),
  slot('voice.tts', { model: { id: 'cosyvoice-300m' } }, 70),
  slot('vision.vlm', { model: { id: 'qwen2-vl-2b' } }, 50),
];

export function probe(
  board: PlanBoard,
  modelId: string,
  version: string,
  variantId: string,
  config: string,
  decode: number,
  prefill: number,
  extra: Partial<ProbeResult> = {},
): ProbeResult {
  return {
    modelId,
    version,
    variantId,
    config,
    engineVersion: '3.6.1',
    boardId: board.boardId,
    ok: true,
    loadMs: 900,
    prefillTokPerSec: prefill,
    decodeTokPerSec: decode,
    peakRssBytes: 1500 * MiB,
    measuredAt: 1_800_000_000_000,
    ...extra,
  };
}
