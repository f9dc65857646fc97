// Planner tables per fixture board: the real detect() on each shared/fixtures/soc tree, the matched
// board-support profile, one appliance catalog. What each board gets, and why, is the contract.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { detect } from '../../agent/detect/index.js';
import { boardFromCapabilities, referenceWeightBytes } from '../../agent/detect/plan-board.js';
import { configKey } from '../../agent/plan/config-key.js';
import { planPlacement } from '../../agent/plan/planner.js';
import { type CatalogModel, defaultPlanPolicy, type Placement } from '../../agent/plan/types.js';
import { matchProfile } from '../../board-support/index.js';
import { socFixturesDir } from '../helpers/paths.js';
import { applianceSlots } from './plan-fixtures.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const general = ['cpu', 'opencl', 'vulkan', 'cuda', 'metal'] as const;

/** RAM of the boards whose fixture tree has no /proc/meminfo (vendor spec sheets). */
const ramWhereUnknown: Record<string, number> = {
  'nvidia-jetson-orin-nano-super': 8 * GiB,
  'qcom-qcs6490-rb3gen2': 6 * GiB,
  'qcom-qcs9075-iq9075-evk': 36 * GiB,
  'rockchip-rk3588-rock5b': 16 * GiB,
  'x86_64-devhost-zen5': 64 * GiB,
};

const catalog: CatalogModel[] = [
  {
    id: 'qwen2-vl-2b',
    version: '1.0.0',
    kind: 'vlm',
    variants: [
      {
        variantId: 'int4',
        quant: 'W4A16',
        weightBytes: 1400 * MiB,
        kvBytesPerToken: 28 * 1024,
        backends: [...general],
        configPath: '/m/vl/int4/config.json',
      },
      {
        variantId: 'int4-htp',
        quant: 'W4A16',
        weightBytes: 1500 * MiB,
        kvBytesPerToken: 28 * 1024,
        backends: ['npu'],
        configPath: '/m/vl/htp/config.json',
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
        backends: [...general],
        configPath: '/m/sv/config.json',
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
        backends: [...general],
        configPath: '/m/cv/config.json',
      },
    ],
  },
];

function planFor(dir: string): Placement {
  const caps = detect({ root: join(socFixturesDir, dir) });
  const board = boardFromCapabilities(caps, matchProfile(caps), { ramBytes: ramWhereUnknown[dir] });
  return planPlacement({
    board,
    catalog: { models: catalog },
    slots: applianceSlots,
    constraints: {},
    probes: [],
    engineVersion: '3.6.1',
    policy: defaultPlanPolicy,
  });
}

/** slot → "status backend-config" with the evidence kind that decided it. */
function table(p: Placement): Record<string, string> {
  const out: Record<string, string> = { board: p.boardId };
  for (const s of p.slots) {
    const inst = p.instances.find((i) => i.key === s.instanceKey);
    out[s.slot] = inst
      ? `${s.status} ${inst.chosen.variantId} ${configKey(inst.chosen.config)} (${inst.chosen.evidence.kind})`
      : s.status;
  }
  return out;
}

const expected: Record<string, Record<string, string>> = {
  'nvidia-jetson-orin-nano-super': {
    board: 'jetson-orin/Tegra234',
    'voice.vad': 'builtin',
    'voice.asr': 'placed int8 cuda t1 p:low m:low cpus:any (static)',
    'voice.llm': 'placed int4 cuda t1 p:low m:low cpus:any (static)',
    'voice.tts': 'placed int8 cuda t1 p:low m:low cpus:any (static)',
    'vision.vlm': 'placed int4 cuda t1 p:low m:low cpus:any (static)',
  },
  'qcom-qcs6490-rb3gen2': {
    board: 'qcs6490/QCM6490',
    'voice.vad': 'builtin',
    'voice.asr': 'placed int8 cpu t4 p:low m:low cpus:4-7 (static)',
    'voice.llm': 'placed int4-htp npu t1 p:low m:low cpus:any (static)',
    'voice.tts': 'placed int8 cpu t4 p:low m:low cpus:4-7 (static)',
    'vision.vlm': 'placed int4-htp npu t1 p:low m:low cpus:any (static)',
  },
  'qcom-qcs9075-iq9075-evk': {
    board: 'qcs9075/QCS9075',
    'voice.vad': 'builtin',
    'voice.asr': 'placed int8 cpu t8 p:low m:low cpus:any (prior)',
    'voice.llm': 'placed int4 cpu t8 p:low m:low cpus:any (prior)',
    'voice.tts': 'placed int8 cpu t8 p:low m:low cpus:any (prior)',
    'vision.vlm': 'placed int4 cpu t8 p:low m:low cpus:any (prior)',
  },
  'rockchip-rk3588-rock5b': {
    board: 'rk3588/RK3588',
    'voice.vad': 'builtin',
    'voice.asr': 'placed int8 cpu t4 p:low m:low cpus:4-7 (static)',
    'voice.llm': 'placed int4 cpu t4 p:low m:low cpus:4-7 (static)',
    'voice.tts': 'placed int8 cpu t4 p:low m:low cpus:4-7 (static)',
    'vision.vlm': 'placed int4 cpu t4 p:low m:low cpus:4-7 (static)',
  },
};

for (const [dir, want] of Object.entries(expected)) {
  test(`placement on ${dir}`, (t) => {
    t.deepEqual(table(planFor(dir)), want);
  });
}

test('every fixture board gets a placement within its memory budget, voice before vision', (t) => {
  for (const dir of readdirSync(socFixturesDir)) {
    const p = planFor(dir);
    t.true(p.budget.plannedBytes <= p.budget.budgetBytes, dir);
    const rank = (s: string) => ['placed', 'degraded', 'builtin', 'unloaded'].indexOf(s);
    const vlm = p.slots.find((s) => s.slot === 'vision.vlm')!;
    const asr = p.slots.find((s) => s.slot === 'voice.asr')!;
    t.true(rank(asr.status) <= rank(vlm.status) || vlm.status === 'placed', dir);
  }
});

test('spacemit-k1 (4 GB, RAM read from the fixture meminfo): vision stays unloaded and the plan says why', (t) => {
  const caps = detect({ root: join(socFixturesDir, 'spacemit-k1-bpi-f3') });
  const board = boardFromCapabilities(caps, matchProfile(caps));
  t.is(board.ramBytes, 3_991_932_928);
  const llm: CatalogModel = {
    id: 'qwen2.5-1.5b',
    version: '1.0.0',
    kind: 'llm',
    variants: [
      {
        variantId: 'int4',
        quant: 'W4A16',
        weightBytes: 1000 * MiB,
        kvBytesPerToken: 28 * 1024,
        backends: [...general],
        configPath: '/m/q15/config.json',
      },
    ],
  };
  const p = planPlacement({
    board,
    catalog: { models: [...catalog, llm] },
    slots: applianceSlots.map((s) =>
      s.slot === 'voice.llm' ? { ...s, use: { model: { id: 'qwen2.5-1.5b' } } } : s,
    ),
    constraints: {},
    probes: [],
    engineVersion: '3.6.1',
    policy: defaultPlanPolicy,
  });
  t.deepEqual(table(p), {
    board: 'spacemit-k1/K1',
    'voice.vad': 'builtin',
    'voice.asr': 'placed int8 cpu t8 p:low m:low cpus:any (static)',
    'voice.llm': 'placed int4 cpu t8 p:low m:low cpus:any (static)',
    'voice.tts': 'placed int8 cpu t8 p:low m:low cpus:any (static)',
    'vision.vlm': 'unloaded',
  });
  t.deepEqual(p.slots.find((s) => s.slot === 'vision.vlm')!.reasons, [
    'qwen2-vl-2b@1.0.0 needs at least 1504 MiB but only 823 MiB of the 2663 MiB budget is left after higher-priority slots',
  ]);
});

test('a board whose RAM cannot be read is refused with the file that was missing', (t) => {
  const caps = detect({ root: join(socFixturesDir, 'rockchip-rk3588-rock5b') });
  t.throws(() => boardFromCapabilities(caps, matchProfile(caps)), {
    message: `Board RAM is unknown (no MemTotal in ${join(socFixturesDir, 'rockchip-rk3588-rock5b')}/proc/meminfo): cannot size the memory budget`,
  });
});

test('prior reference sizes are read from the model name', (t) => {
  t.is(referenceWeightBytes('Qwen3.5-2B W4A16'), 1e9);
  t.is(referenceWeightBytes('Qwen2.5-0.5B int8'), 5e8);
  t.is(referenceWeightBytes('Llama-3.2-1B fp16'), 2e9);
  t.is(referenceWeightBytes('MobileNetV2'), undefined);
});
