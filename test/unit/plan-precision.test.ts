// fp16 or fp32 on the CPU: a measured choice on CPUs with fp16 arithmetic, never an assumption, and no fp16
// candidate where MNN has no fp16 CPU kernels. Boards come from the real detect() on shared/fixtures/soc trees
// (and an emulated arm64 process on the x86 development host); speeds from precision-fixtures.ts.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { detect } from '../../agent/detect/index.js';
import { boardFromCapabilities, cpuFp16 } from '../../agent/detect/plan-board.js';
import { configKey } from '../../agent/plan/config-key.js';
import { explainPlacement } from '../../agent/plan/explain.js';
import { planPlacement } from '../../agent/plan/planner.js';
import { decidePrecision } from '../../agent/plan/precision.js';
import {
  type CatalogModel,
  defaultPlanPolicy,
  type ModelKind,
  type Placement,
  type PlanBoard,
  type PlanPolicy,
  type Precision,
  type ProbeResult,
  type SlotConstraints,
} from '../../agent/plan/types.js';
import { probeCandidates } from '../../agent/runtime/measuring/probe.js';
import { matchProfile } from '../../board-support/index.js';
import { socFixturesDir } from '../helpers/paths.js';
import { boardPrecision, noFp16Boards, type PrecisionSpeeds } from './precision-fixtures.js';

const MiB = 1024 * 1024;
const ENGINE = '3.6.1';
const MEASURED_AT = Date.UTC(2026, 10, 30, 9, 0, 0);

function boardOf(dir: string, ramBytes: number): PlanBoard {
  const caps = detect({ root: join(socFixturesDir, dir) });
  return boardFromCapabilities(caps, matchProfile(caps), { ramBytes });
}

function model(kind: ModelKind): CatalogModel {
  return {
    id: 'm',
    version: '1.0.0',
    kind,
    variants: [
      {
        variantId: 'int4',
        quant: 'W4A16',
        weightBytes: 900 * MiB,
        kvBytesPerToken: 28 * 1024,
        backends: ['cpu'],
        configPath: '/m/config.json',
      },
    ],
  };
}

/** A probe of each CPU candidate the prober would run, with the given speeds per precision. */
function probesFor(
  board: PlanBoard,
  m: CatalogModel,
  speeds: Partial<Record<Precision, PrecisionSpeeds | { error: string }>>,
): ProbeResult[] {
  return probeCandidates(board, { models: [m] }, defaultPlanPolicy, ENGINE).flatMap((c) => {
    const s = speeds[c.config.precision];
    if (s === undefined) return [];
    const failed = 'error' in s;
    return [
      {
        modelId: c.modelId,
        version: c.version,
        variantId: c.variantId,
        config: configKey(c.config),
        engineVersion: ENGINE,
        boardId: board.boardId,
        ok: !failed,
        loadMs: 900,
        prefillTokPerSec: failed ? 0 : s.prefillTokPerSec,
        decodeTokPerSec: failed ? 0 : s.decodeTokPerSec,
        peakRssBytes: 1000 * MiB,
        measuredAt: MEASURED_AT,
        ...(failed ? { error: s.error } : {}),
      },
    ];
  });
}

// The measured choice (the default policy); a pinned engine's known fp16 defect has its tests at the end.
const measuredPolicy = defaultPlanPolicy;
/** A defect the engine could not steer around (none at MNN 4d40bdbd7: agent/plan/types.ts, fp16Fault). */
const faultyPolicy: PlanPolicy = {
  ...defaultPlanPolicy,
  fp16Fault: "MNN x's fp16 kernels write an LLM's logits into freed memory",
};

function plan(
  board: PlanBoard,
  m: CatalogModel,
  probes: ProbeResult[],
  constraints: SlotConstraints = {},
  policy: PlanPolicy = measuredPolicy,
): Placement {
  return planPlacement({
    board,
    catalog: { models: [m] },
    slots: [
      { slot: 'voice.llm', use: { model: { id: m.id } }, priority: 80, contextTokens: 2048, enabled: true },
    ],
    constraints: { 'voice.llm': constraints },
    probes,
    engineVersion: ENGINE,
    policy,
  });
}

function chosen(
  t: ExecutionContext,
  p: Placement,
): { precision: Precision; reason: string; evidence: string } {
  const inst = p.instances[0];
  if (!inst) {
    t.fail('no instance placed');
    throw new Error('no instance');
  }
  t.is(inst.chosen.config.backend_type, 'cpu');
  const reason = inst.reasons.find((r) => r.startsWith('precision: ')) ?? '';
  return { precision: inst.chosen.config.precision, reason, evidence: inst.chosen.evidence.kind };
}

for (const f of boardPrecision) {
  test(`${f.dir}: ${f.expect.precision === 'low' ? 'fp16' : 'fp32'} chosen from the measured ${f.model} numbers (${f.source})`, (t) => {
    const board = boardOf(f.dir, f.ramBytes);
    t.true(board.cpuFp16?.available, `${f.dir} has fp16 arithmetic`);
    const m = model(f.kind);
    const c = chosen(t, plan(board, m, probesFor(board, m, { low: f.fp16, normal: f.fp32 })));
    t.is(c.precision, f.expect.precision);
    t.is(c.evidence, 'measured');
    if (f.expect.precision === 'low')
      t.regex(
        c.reason,
        new RegExp(
          `^precision: fp16 \\(low\\): ${f.expect.speedup}× faster than fp32 \\(normal\\) on the ${f.kind} reference request .*decode ${f.fp16.decodeTokPerSec} vs ${f.fp32.decodeTokPerSec} tok/s.*probes of 2026-11-30; fp16 needs ≥ 1.1×`,
        ),
      );
    else
      t.regex(
        c.reason,
        new RegExp(
          `^precision: fp32 \\(normal\\): fp16 not faster by the 1.1× margin \\(${f.expect.speedup}× on the ${f.kind} reference request`,
        ),
      );
  });
}

test('the prober measures both precisions on a CPU with fp16, one on a CPU without', (t) => {
  const m = model('llm');
  const rk = probeCandidates(
    boardOf('rockchip-rk3588-rock5b', 16 * 1024 * MiB),
    { models: [m] },
    defaultPlanPolicy,
    ENGINE,
  );
  t.deepEqual(rk.map((c) => c.config.precision).sort(), ['low', 'normal']);
  for (const b of noFp16Boards) {
    const cands = probeCandidates(boardOf(b.dir, b.ramBytes), { models: [m] }, defaultPlanPolicy, ENGINE);
    t.deepEqual(
      cands.map((c) => c.config.precision),
      ['low'],
      `${b.dir}: one CPU config, at the policy's precision as before`,
    );
  }
});

test('no fp16 candidate on riscv64 and x86: measurements of another precision change nothing, the reason says why', (t) => {
  for (const b of noFp16Boards) {
    const board = boardOf(b.dir, b.ramBytes);
    t.false(board.cpuFp16?.available, b.dir);
    const m = model('llm');
    // A stray fp32 probe (from a pin, say) that looks far faster is not a candidate to switch to.
    const stray = probesFor(board, m, { low: { prefillTokPerSec: 10, decodeTokPerSec: 2 } }).map((p) => ({
      ...p,
      config: p.config.replace('p:low', 'p:normal'),
      prefillTokPerSec: 100,
      decodeTokPerSec: 20,
    }));
    t.is(stray.length, 1);
    const c = chosen(t, plan(board, m, stray));
    t.is(c.precision, 'low', b.dir);
    t.regex(
      c.reason,
      new RegExp(
        `^precision: low, no fp16 candidate: ${b.arch}.*MNN's fp16 CPU backend \\(Arm82\\) exists for arm64 only, so precision low runs the fp32 kernels here`,
      ),
      b.dir,
    );
  }
});

test('a precision pin on a CPU without fp16 is honoured and says what it runs', (t) => {
  const x86 = noFp16Boards.find((b) => b.arch === 'x86_64')!;
  const c = chosen(t, plan(boardOf(x86.dir, x86.ramBytes), model('llm'), [], { precision: 'normal' }));
  t.is(c.precision, 'normal');
  t.regex(
    c.reason,
    /^precision: normal pinned; x86_64: MNN's fp16 CPU backend \(Arm82\) exists for arm64 only/,
  );
});

test('an aarch64 CPU without fp16 arithmetic (Cortex-A53 class) has no fp16 candidate, from its cpuinfo', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'precision-a53-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'proc'), { recursive: true });
  writeFileSync(
    join(root, 'proc', 'cpuinfo'),
    'processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\nCPU architecture: 8\nCPU part\t: 0xd03\n\n',
  );
  writeFileSync(join(root, 'present.txt'), '');
  const fp16 = cpuFp16(detect({ root }));
  t.false(fp16.available);
  t.regex(
    fp16.reason,
    /^aarch64 without fp16 arithmetic \(\/proc\/cpuinfo: Features lacks fphp asimdhp\): precision low runs the fp32 NEON kernels$/,
  );
});

test('a pin of the precision wins over the measurements, both ways', (t) => {
  const f = boardPrecision.find((x) => x.dir === 'rockchip-rk3588-rock5b')!;
  const board = boardOf(f.dir, f.ramBytes);
  const m = model('llm');
  const fp16Faster = probesFor(board, m, { low: f.fp16, normal: f.fp32 });
  const pinned32 = chosen(t, plan(board, m, fp16Faster, { precision: 'normal' }));
  t.is(pinned32.precision, 'normal');
  t.is(pinned32.reason, 'precision: fp32 (normal) pinned: not chosen by measurement');
  const fp16Slower = probesFor(board, m, { low: f.fp32, normal: f.fp16 });
  const pinned16 = chosen(t, plan(board, m, fp16Slower, { precision: 'low' }));
  t.is(pinned16.precision, 'low');
  t.is(pinned16.reason, 'precision: fp16 (low) pinned: not chosen by measurement');
  const high = chosen(t, plan(board, m, fp16Faster, { precision: 'high' }));
  t.is(high.precision, 'high');
});

test('without measurements fp16 is the stated default, "not measured yet"; one measured precision is not a comparison', (t) => {
  const f = boardPrecision.find((x) => x.dir === 'nvidia-jetson-orin-nano-super')!;
  const board = boardOf(f.dir, f.ramBytes);
  const m = model('llm');
  const none = chosen(t, plan(board, m, []));
  t.is(none.precision, 'low');
  t.is(
    none.reason,
    'precision: fp16 (low) by default: not measured yet (no probe of either); `mnn-edge bench models` probes both and fp16 stays only if ≥ 1.1× faster',
  );
  const only32 = chosen(t, plan(board, m, probesFor(board, m, { normal: f.fp32 })));
  t.is(only32.precision, 'low');
  t.regex(only32.reason, /not measured yet \(only fp32 has a probe\)/);
});

test('a failed fp16 probe leaves fp32, with the error; a failed fp32 probe leaves fp16', (t) => {
  const f = boardPrecision.find((x) => x.dir === 'rpi5-bcm2712')!;
  const board = boardOf(f.dir, f.ramBytes);
  const m = model('llm');
  const no16 = chosen(
    t,
    plan(board, m, probesFor(board, m, { low: { error: 'Arm82 backend: out of memory' }, normal: f.fp32 })),
  );
  t.is(no16.precision, 'normal');
  t.is(
    no16.reason,
    'precision: fp32 (normal): the fp16 probe failed on this board (Arm82 backend: out of memory)',
  );
  const no32 = chosen(
    t,
    plan(board, m, probesFor(board, m, { low: f.fp16, normal: { error: 'load failed' } })),
  );
  t.is(no32.precision, 'low');
});

test('the 1.1× margin: exactly 1.1× faster is fp16, just under is fp32', (t) => {
  const ctx = { policy: defaultPlanPolicy, kind: 'llm' as const, reference: { prefill: 0, decode: 64 } };
  const probe = (decode: number): ProbeResult => ({
    modelId: 'm',
    version: '1',
    variantId: 'v',
    config: 'cpu',
    engineVersion: ENGINE,
    boardId: 'b',
    ok: true,
    loadMs: 1,
    prefillTokPerSec: 100,
    decodeTokPerSec: decode,
    peakRssBytes: 1,
    measuredAt: MEASURED_AT,
  });
  const at = (fp16: number) =>
    decidePrecision({ precision: 'low', probe: probe(fp16) }, { precision: 'normal', probe: probe(10) }, ctx);
  t.is(at(11).precision, 'low');
  t.is(at(11).speedup?.toFixed(2), '1.10');
  t.is(at(10.9).precision, 'normal');
  t.regex(at(10.9).reason, /^fp32 \(normal\): fp16 not faster by the 1.1× margin \(1\.09×/);
  t.regex(at(9.6).reason, /fp16 not faster by the 1.1× margin \(0\.96×/);
});

function emulatedArm64Board(t: ExecutionContext): PlanBoard {
  // An arm64 process under QEMU user mode on the x86 development host: the host's /proc/cpuinfo, the emulated
  // CPU's auxiliary vector (QEMU 7.2 -cpu max: fphp, asimdhp, asimddp, sve).
  const root = mkdtempSync(join(tmpdir(), 'precision-emulated-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'proc', 'self'), { recursive: true });
  copyFileSync(join(socFixturesDir, 'x86_64-devhost-zen5', 'proc', 'cpuinfo'), join(root, 'proc', 'cpuinfo'));
  const auxv = Buffer.alloc(3 * 16);
  auxv.writeBigUInt64LE(16n, 0);
  auxv.writeBigUInt64LE((1n << 9n) | (1n << 10n) | (1n << 20n) | (1n << 22n), 8);
  writeFileSync(join(root, 'proc', 'self', 'auxv'), auxv);
  writeFileSync(join(root, 'present.txt'), '');
  const caps = detect({ root, processArch: 'arm64' });
  return boardFromCapabilities(caps, matchProfile(caps), { ramBytes: 8 * 1024 * MiB });
}

test('under emulation the probes speeds are not used to choose, and the plan says so', (t) => {
  const board = emulatedArm64Board(t);
  t.true(board.cpuFp16?.available, 'the emulated CPU has fp16 (AT_HWCAP)');
  t.regex(board.emulated ?? '', /^emulated: this aarch64 process runs on a x86_64 machine \(QEMU user mode/);
  t.regex(board.boardId, /\+emulated$/, "emulated probes are stored apart from the board's");
  const m = model('llm');
  // Whichever precision the emulator made look faster, the default stays.
  for (const [fast, slow] of [
    [
      { prefillTokPerSec: 9, decodeTokPerSec: 3 },
      { prefillTokPerSec: 2, decodeTokPerSec: 0.5 },
    ],
    [
      { prefillTokPerSec: 2, decodeTokPerSec: 0.5 },
      { prefillTokPerSec: 9, decodeTokPerSec: 3 },
    ],
  ] as const) {
    const p = plan(board, m, probesFor(board, m, { low: fast, normal: slow }));
    const c = chosen(t, p);
    t.is(c.precision, 'low');
    t.not(c.evidence, 'measured', 'an emulated speed is not evidence');
    t.regex(
      c.reason,
      /^precision: fp16 \(low\) by default: fp16 vs fp32 is not chosen by speed here: emulated: .*emulated figures, not used: decode/,
    );
    t.regex(
      p.instances[0]!.chosen.summary,
      /^probe ok under emulation \(decode [\d.]+ tok\/s, prefill [\d.]+ tok\/s: the emulator's speed, not used\); not measured, no prior/,
    );
  }
  // Whether it works is the board's answer, emulated or not: a failed fp16 probe still rules fp16 out.
  const failed = chosen(
    t,
    plan(
      board,
      m,
      probesFor(board, m, {
        low: { error: 'Illegal instruction' },
        normal: { prefillTokPerSec: 1, decodeTokPerSec: 1 },
      }),
    ),
  );
  t.is(failed.precision, 'normal');
});

test('`mnn-edge plan` shows which precision won and by how much', (t) => {
  const f = boardPrecision.find((x) => x.dir === 'rockchip-rk3588-rock5b')!;
  const board = boardOf(f.dir, f.ramBytes);
  const m = model('llm');
  const text = explainPlacement(plan(board, m, probesFor(board, m, { low: f.fp16, normal: f.fp32 })));
  t.regex(text, /\n {2}- precision: fp16 \(low\): 1\.45× faster than fp32 \(normal\)/);
  t.regex(text, /instance m@1\.0\.0\/int4\|cpu t4 p:low m:low cpus:4-7/);
});

test('the precision not kept is the last fallback on the CPU, so an fp16 failure ends on fp32; none on x86 or under a pin', (t) => {
  const m = model('llm');
  const rk = boardPrecision.find((x) => x.dir === 'rockchip-rk3588-rock5b')!;
  const rkBoard = boardOf(rk.dir, rk.ramBytes);
  const fp16Kept = plan(rkBoard, m, probesFor(rkBoard, m, { low: rk.fp16, normal: rk.fp32 })).instances[0]!;
  t.is(fp16Kept.chosen.config.precision, 'low');
  t.deepEqual(
    fp16Kept.fallback.map((c) => configKey(c.config)),
    ['cpu t4 p:normal m:low cpus:4-7'],
  );
  t.is(fp16Kept.fallback[0]!.precisionReason, 'fp32 (normal): the last fallback if fp16 (low) fails');
  const pi = boardPrecision.find((x) => x.dir === 'rpi5-bcm2712')!;
  const piBoard = boardOf(pi.dir, pi.ramBytes);
  const fp32Kept = plan(piBoard, m, probesFor(piBoard, m, { low: pi.fp16, normal: pi.fp32 })).instances[0]!;
  t.deepEqual(
    fp32Kept.fallback.map((c) => c.config.precision),
    ['low'],
  );
  t.deepEqual(
    plan(rkBoard, m, [], { precision: 'low' }).instances[0]!.fallback,
    [],
    'a pinned precision has no other',
  );
  const x86 = noFp16Boards.find((b) => b.arch === 'x86_64')!;
  t.deepEqual(plan(boardOf(x86.dir, x86.ramBytes), m, []).instances[0]!.fallback, []);
});

test("a pinned engine's known fp16 defect: arm64 CPUs run fp32 whatever fp16 measured, with no fp16 fallback; a pin of low still runs it", (t) => {
  const m = model('llm');
  for (const f of boardPrecision) {
    const board = boardOf(f.dir, f.ramBytes);
    const p = plan(board, m, probesFor(board, m, { low: f.fp16, normal: f.fp32 }), {}, faultyPolicy);
    const inst = p.instances[0]!;
    t.is(inst.chosen.config.precision, 'normal', f.dir);
    t.regex(
      inst.chosen.precisionReason ?? '',
      /^fp32 \(normal\): fp16 is not offered: MNN x's fp16 kernels write an LLM's logits into freed memory; a slot that pins precision low runs it anyway$/,
      f.dir,
    );
    t.false(
      inst.fallback.some((c) => c.config.backend_type === 'cpu' && c.config.precision === 'low'),
      `${f.dir}: no fallback into the fault`,
    );
  }
  const rk = boardPrecision.find((x) => x.dir === 'rockchip-rk3588-rock5b')!;
  const rkBoard = boardOf(rk.dir, rk.ramBytes);
  const pinned = plan(rkBoard, m, [], { precision: 'low' }, faultyPolicy).instances[0]!;
  t.is(pinned.chosen.config.precision, 'low');
  t.regex(pinned.chosen.precisionReason ?? '', /^fp16 \(low\) pinned, although MNN x's fp16 kernels/);
  // `bench models` still measures fp16, so a fix, when the pin moves, shows in the figures.
  t.deepEqual(
    probeCandidates(rkBoard, { models: [m] }, faultyPolicy, ENGINE)
      .map((c) => c.config.precision)
      .sort(),
    ['low', 'normal'],
  );
  // Where 'low' never meant fp16 nothing changes.
  for (const b of noFp16Boards) {
    const c = plan(boardOf(b.dir, b.ramBytes), m, [], {}, faultyPolicy).instances[0]!.chosen;
    t.is(c.config.precision, 'low', b.dir);
  }
});
