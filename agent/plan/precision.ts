import type { ModelKind, PlanPolicy, Precision, ProbeResult } from './types.js';

// fp16 or fp32 on a CPU with fp16 arithmetic. MNN's `precision: "low"` runs the Arm82 fp16 kernels there
// (CPUBackend::onCreate: supportFp16arith && Precision_Low); "normal"/"high" run the fp32 (NEON) kernels. fp16
// halves activation traffic but rounds differently, and on some cores and quantisations it is no faster, so it is
// a measured choice, not an assumption. The rule, in order:
//   1. a pin (config or operator source) decides; nothing is compared;
//   2. a probe that failed rules its precision out while the other one works;
//   3. under emulation speeds are the emulator's: the default below, and the reason says so;
//   4. both measured: fp16 wins only when its reference request is at least `policy.fp16MinSpeedup` (1.1×)
//      faster than fp32's, else fp32;
//   5. otherwise the default, `policy.precision` ('low' = fp16, MNN's own LLM default), "not measured yet".

/** fp16 is precision 'low' on a CPU with fp16 arithmetic. */
export const FP16: Precision = 'low';

/** The fp32 precision compared with fp16: the policy's when it is not 'low', else MNN's 'normal'. */
export function fp32Precision(policy: PlanPolicy): Precision {
  return policy.precision === FP16 ? 'normal' : policy.precision;
}

/** "fp16 (low)", "fp32 (normal)". */
export function precisionLabel(p: Precision): string {
  return `${p === FP16 ? 'fp16' : 'fp32'} (${p})`;
}

export interface PrecisionOption {
  precision: Precision;
  /** The latest probe of this exact config on this board and engine. */
  probe: ProbeResult | undefined;
}

export interface PrecisionContext {
  policy: PlanPolicy;
  kind: ModelKind;
  reference: { prefill: number; decode: number };
  /** Why speeds here are not the board's (QEMU user mode), when they are not. */
  emulated?: string | undefined;
}

export interface PrecisionDecision {
  precision: Precision;
  reason: string;
  /** fp32's reference-request time ÷ fp16's, when both were measured and used. */
  speedup?: number;
}

function tps(n: number): string {
  return n >= 100 ? n.toFixed(0) : n.toFixed(1);
}

function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function refSeconds(p: ProbeResult, ref: { prefill: number; decode: number }): number {
  return ref.prefill / p.prefillTokPerSec + ref.decode / p.decodeTokPerSec;
}

function figures(fp16: ProbeResult, fp32: ProbeResult): string {
  return (
    `decode ${tps(fp16.decodeTokPerSec)} vs ${tps(fp32.decodeTokPerSec)} tok/s, ` +
    `prefill ${tps(fp16.prefillTokPerSec)} vs ${tps(fp32.prefillTokPerSec)} tok/s`
  );
}

function probesOf(a: ProbeResult, b: ProbeResult): string {
  const [x, y] = [day(a.measuredAt), day(b.measuredAt)];
  return x === y ? `probes of ${x}` : `probes of ${x} and ${y}`;
}

function byDefault(ctx: PrecisionContext, why: string): PrecisionDecision {
  const p = ctx.policy.precision;
  return { precision: p, reason: `${precisionLabel(p)} by default: ${why}` };
}

/** Which precision a CPU candidate with fp16 arithmetic runs at, and the sentence that says why. */
export function decidePrecision(
  fp16: PrecisionOption,
  fp32: PrecisionOption,
  ctx: PrecisionContext,
): PrecisionDecision {
  const a = fp16.probe;
  const b = fp32.probe;
  const l16 = precisionLabel(fp16.precision);
  const l32 = precisionLabel(fp32.precision);
  if (a && !a.ok && b?.ok)
    return {
      precision: fp32.precision,
      reason: `${l32}: the fp16 probe failed on this board (${a.error ?? 'unknown error'})`,
    };
  if (b && !b.ok && a?.ok)
    return {
      precision: fp16.precision,
      reason: `${l16}: the fp32 probe failed on this board (${b.error ?? 'unknown error'})`,
    };
  if (a && b && !a.ok && !b.ok)
    return byDefault(ctx, 'both the fp16 and the fp32 probe failed on this board');
  if (ctx.emulated !== undefined) {
    const seen = a?.ok && b?.ok ? ` (emulated figures, not used: ${figures(a, b)}, fp16 vs fp32)` : '';
    return byDefault(ctx, `fp16 vs fp32 is not chosen by speed here: ${ctx.emulated}${seen}`);
  }
  if (a?.ok && b?.ok) {
    const speedup = refSeconds(b, ctx.reference) / refSeconds(a, ctx.reference);
    const margin = ctx.policy.fp16MinSpeedup;
    const request = `the ${ctx.kind} reference request (${ctx.reference.prefill} prompt + ${ctx.reference.decode} decode tokens)`;
    if (speedup >= margin)
      return {
        precision: fp16.precision,
        speedup,
        reason:
          `${l16}: ${speedup.toFixed(2)}× faster than ${l32} on ${request}: ${figures(a, b)} ` +
          `(${probesOf(a, b)}; fp16 needs ≥ ${margin}×)`,
      };
    return {
      precision: fp32.precision,
      speedup,
      reason:
        `${l32}: fp16 not faster by the ${margin}× margin (${speedup.toFixed(2)}× on ${request}: ` +
        `${figures(a, b)}, ${probesOf(a, b)})`,
    };
  }
  const measured = a?.ok ? 'only fp16 has a probe' : b?.ok ? 'only fp32 has a probe' : 'no probe of either';
  return byDefault(
    ctx,
    `not measured yet (${measured}); \`mnn-edge bench models\` probes both and fp16 stays only if ` +
      `≥ ${ctx.policy.fp16MinSpeedup}× faster`,
  );
}
