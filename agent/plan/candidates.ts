import { candidateKey, configKey } from './config-key.js';
import { estimateInstanceBytes, snapshotsFor } from './memory.js';
import { decidePrecision, FP16, fp32Precision, precisionLabel } from './precision.js';
import { chooseThreads } from './threads.js';
import type {
  BackendType,
  Candidate,
  CatalogModel,
  CatalogVariant,
  Evidence,
  MnnConfig,
  ModelKind,
  PlanBoard,
  PlanPolicy,
  ProbeResult,
  SlotConstraints,
} from './types.js';

/** The request a slot kind is judged by: prompt tokens to prefill and tokens to decode. A VLM's prompt carries
 *  the image tokens, a TTS mostly decodes, so each kind weighs prefill and decode speed differently. */
export const REFERENCE_REQUEST: Record<ModelKind, { prefill: number; decode: number }> = {
  llm: { prefill: 128, decode: 64 },
  vlm: { prefill: 320, decode: 32 },
  omni: { prefill: 200, decode: 64 },
  asr: { prefill: 200, decode: 32 },
  tts: { prefill: 32, decode: 200 },
  vad: { prefill: 1, decode: 1 },
  wake: { prefill: 1, decode: 1 },
};

/** thread_num is a mode word, not a thread count, on GPU backends: for OpenCL 68 = buffer memory + wide tuning
 *  (MNN's documented LLM setting); the others take 1. */
const GPU_MODE: Partial<Record<BackendType, number>> = { opencl: 68 };

export interface CandidateContext {
  board: PlanBoard;
  policy: PlanPolicy;
  probes: readonly ProbeResult[];
  engineVersion: string;
  contextTokens: number;
  /** Probing: on a CPU with fp16 arithmetic, both the fp16 and the fp32 config, not the one a decision keeps. */
  everyPrecision?: boolean;
}

export interface Rejected {
  what: string;
  reason: string;
}

export function configFor(
  backend: BackendType,
  board: PlanBoard,
  policy: PlanPolicy,
  constraints: SlotConstraints,
): MnnConfig {
  const threads = chooseThreads(board);
  const cpu = backend === 'cpu';
  return {
    backend_type: backend,
    thread_num: constraints.threads ?? (cpu ? threads.threads : (GPU_MODE[backend] ?? 1)),
    precision: constraints.precision ?? policy.precision,
    memory: constraints.memory ?? policy.memory,
    cpus: cpu ? threads.cpus : [],
  };
}

function tps(n: number): string {
  return n >= 100 ? n.toFixed(0) : n.toFixed(1);
}

function latestProbe(
  probes: readonly ProbeResult[],
  model: CatalogModel,
  variant: CatalogVariant,
  config: string,
  ctx: CandidateContext,
): ProbeResult | undefined {
  let best: ProbeResult | undefined;
  for (const p of probes) {
    if (
      p.modelId === model.id &&
      p.version === model.version &&
      p.variantId === variant.variantId &&
      p.config === config &&
      p.engineVersion === ctx.engineVersion &&
      p.boardId === ctx.board.boardId &&
      (best === undefined || p.measuredAt > best.measuredAt)
    )
      best = p;
  }
  return best;
}

type EvidenceResult =
  | { evidence: Evidence; refSeconds: number | undefined; summary: string }
  | { rejected: string };

function evidenceFor(
  model: CatalogModel,
  variant: CatalogVariant,
  config: MnnConfig,
  ctx: CandidateContext,
): EvidenceResult {
  const probe = latestProbe(ctx.probes, model, variant, configKey(config), ctx);
  if (probe?.ok && ctx.board.emulated !== undefined) {
    // It loaded and generated, which is worth knowing; its speed is the emulator's, so the candidate is ranked
    // as if unmeasured.
    const rest = unmeasuredEvidence(variant, config, ctx, REFERENCE_REQUEST[model.kind]);
    return {
      ...rest,
      summary:
        `probe ok under emulation (decode ${tps(probe.decodeTokPerSec)} tok/s, prefill ` +
        `${tps(probe.prefillTokPerSec)} tok/s: the emulator's speed, not used); ${rest.summary}`,
    };
  }
  return probedEvidence(model, variant, config, ctx, probe);
}

function probedEvidence(
  model: CatalogModel,
  variant: CatalogVariant,
  config: MnnConfig,
  ctx: CandidateContext,
  probe: ProbeResult | undefined,
): EvidenceResult {
  const ref = REFERENCE_REQUEST[model.kind];
  if (probe && !probe.ok) {
    const why = `probe failed on this board: ${probe.error ?? 'unknown error'}`;
    // The CPU is the floor of every chain: a failed CPU probe (often a transient out-of-memory) is reported
    // but does not leave the slot with nothing to run.
    if (config.backend_type !== 'cpu') return { rejected: why };
    const rank = ctx.policy.staticOrder.indexOf('cpu');
    return {
      evidence: { kind: 'static', rank: rank === -1 ? ctx.policy.staticOrder.length : rank },
      refSeconds: undefined,
      summary: `${why}; kept as the CPU floor`,
    };
  }
  if (probe) {
    const refSeconds = ref.prefill / probe.prefillTokPerSec + ref.decode / probe.decodeTokPerSec;
    return {
      evidence: { kind: 'measured', probe },
      refSeconds,
      summary:
        `measured: decode ${tps(probe.decodeTokPerSec)} tok/s, prefill ${tps(probe.prefillTokPerSec)} tok/s, ` +
        `load ${Math.round(probe.loadMs)} ms, peak RSS ${Math.round(probe.peakRssBytes / 1048576)} MiB`,
    };
  }
  return unmeasuredEvidence(variant, config, ctx, ref);
}

/** A scaled prior of the board profile, else the static order. */
function unmeasuredEvidence(
  variant: CatalogVariant,
  config: MnnConfig,
  ctx: CandidateContext,
  ref: { prefill: number; decode: number },
): { evidence: Evidence; refSeconds: number | undefined; summary: string } {
  const prior = ctx.board.priors.find((p) => p.backend === config.backend_type);
  if (prior && variant.weightBytes > 0) {
    const scale = prior.refWeightBytes / variant.weightBytes;
    const prefill = prior.prefillTokPerSec * scale;
    const decode = prior.decodeTokPerSec * scale;
    return {
      evidence: { kind: 'prior', prior, prefillTokPerSec: prefill, decodeTokPerSec: decode },
      refSeconds: ref.prefill / prefill + ref.decode / decode,
      summary:
        `prior (${prior.source}): decode ${tps(prior.decodeTokPerSec)} tok/s at ` +
        `${Math.round(prior.refWeightBytes / 1048576)} MiB of weights, scaled to ${tps(decode)} tok/s`,
    };
  }
  const order = ctx.policy.staticOrder;
  const software = ctx.board.backends.find((b) => b.backend === config.backend_type)?.software === true;
  if (software && config.backend_type !== 'cpu') {
    const cpuRank = order.indexOf('cpu');
    // Half a place after the CPU: behind it, ahead of backends the order does not name.
    const r = (cpuRank === -1 ? order.length : cpuRank) + 0.5;
    return {
      evidence: { kind: 'static', rank: r },
      refSeconds: undefined,
      summary: `not measured, no prior: ${config.backend_type} here is a software device on the CPU, so it ranks after cpu`,
    };
  }
  const rank = order.indexOf(config.backend_type);
  const r = rank === -1 ? order.length : rank;
  return {
    evidence: { kind: 'static', rank: r },
    refSeconds: undefined,
    summary: `not measured, no prior: static order #${r + 1} (${order.join(' > ')})`,
  };
}

/**
 * The config(s) a (variant, backend) runs with. Only the CPU of a board with fp16 arithmetic has a precision to
 * choose (agent/plan/precision.ts has the rule); a board without the detection's fp16 claim (hand-made test
 * boards) keeps the policy's precision and no precision reason.
 */
function configsFor(
  model: CatalogModel,
  variant: CatalogVariant,
  backend: BackendType,
  constraints: SlotConstraints,
  ctx: CandidateContext,
): Array<{ config: MnnConfig; precisionReason?: string; alternate?: true }> {
  const base = configFor(backend, ctx.board, ctx.policy, constraints);
  const fp16 = ctx.board.cpuFp16;
  if (backend !== 'cpu' || fp16 === undefined) return [{ config: base }];
  if (constraints.precision !== undefined)
    return [
      {
        config: base,
        precisionReason: !fp16.available
          ? `${base.precision} pinned; ${fp16.reason}`
          : base.precision === FP16 && ctx.policy.fp16Fault !== undefined
            ? `${precisionLabel(base.precision)} pinned, although ${ctx.policy.fp16Fault}`
            : `${precisionLabel(base.precision)} pinned: not chosen by measurement`,
      },
    ];
  if (!fp16.available)
    return [{ config: base, precisionReason: `${base.precision}, no fp16 candidate: ${fp16.reason}` }];
  const c16: MnnConfig = { ...base, precision: FP16 };
  const c32: MnnConfig = { ...base, precision: fp32Precision(ctx.policy) };
  // `bench models` probes both, a known engine defect or not, so the defect's fix shows up in its figures.
  if (ctx.everyPrecision) return [{ config: c16 }, { config: c32 }];
  // A known engine defect keeps fp16 out entirely, even as the last fallback: falling back into a heap
  // corruption is no fallback.
  if (ctx.policy.fp16Fault !== undefined)
    return [
      {
        config: c32,
        precisionReason:
          `${precisionLabel(c32.precision)}: fp16 is not offered: ${ctx.policy.fp16Fault}; ` +
          'a slot that pins precision low runs it anyway',
      },
    ];
  const decision = decidePrecision(
    { precision: c16.precision, probe: latestProbe(ctx.probes, model, variant, configKey(c16), ctx) },
    { precision: c32.precision, probe: latestProbe(ctx.probes, model, variant, configKey(c32), ctx) },
    {
      policy: ctx.policy,
      kind: model.kind,
      reference: REFERENCE_REQUEST[model.kind],
      emulated: ctx.board.emulated,
    },
  );
  const [kept, other] = decision.precision === c16.precision ? [c16, c32] : [c32, c16];
  // The precision not kept is no rival, but the last resort if the kept one fails on this board at run time.
  return [
    { config: kept, precisionReason: decision.reason },
    {
      config: other,
      precisionReason: `${precisionLabel(other.precision)}: the last fallback if ${precisionLabel(kept.precision)} fails`,
      alternate: true,
    },
  ];
}

/** Every (variant, backend) way to run a model on this board, with what is known about each. Candidates a
 *  failed probe ruled out, or whose backend the board lacks, come back in `rejected` with the reason; on a CPU
 *  with fp16 arithmetic, the CPU at the precision the rule did not keep comes back in `alternates` (unranked: a
 *  fallback chain may end on it, nothing chooses it). */
export function enumerateCandidates(
  model: CatalogModel,
  constraints: SlotConstraints,
  ctx: CandidateContext,
): { candidates: Candidate[]; rejected: Rejected[]; alternates: Candidate[] } {
  const candidates: Candidate[] = [];
  const alternates: Candidate[] = [];
  const rejected: Rejected[] = [];
  const variants = constraints.variant
    ? model.variants.filter((v) => v.variantId === constraints.variant)
    : model.variants;
  const snapshots = snapshotsFor(model.kind, ctx.policy);
  for (const variant of variants) {
    const backends = new Set<BackendType>(variant.backends);
    if (constraints.backend) {
      // A pin is honoured even against detection: the runtime then proves it, and falls back to the CPU.
      backends.clear();
      backends.add(constraints.backend);
      if (variant.backends.includes('cpu')) backends.add('cpu');
    }
    for (const backend of backends) {
      const what = `${variant.variantId} on ${backend}`;
      const availability = ctx.board.backends.find((b) => b.backend === backend);
      const pinned = constraints.backend === backend;
      if (backend !== 'cpu' && !pinned && !availability?.available) {
        rejected.push({ what, reason: `backend unavailable: ${availability?.reason ?? 'not detected'}` });
        continue;
      }
      for (const { config, precisionReason, alternate } of configsFor(
        model,
        variant,
        backend,
        constraints,
        ctx,
      )) {
        const ev = evidenceFor(model, variant, config, ctx);
        if ('rejected' in ev) {
          rejected.push({ what, reason: ev.rejected });
          continue;
        }
        (alternate ? alternates : candidates).push({
          key: candidateKey(model.id, model.version, variant.variantId, config),
          modelId: model.id,
          version: model.version,
          variantId: variant.variantId,
          quant: variant.quant,
          configPath: variant.configPath,
          ...(variant.configOverrides ? { configOverrides: variant.configOverrides } : {}),
          config,
          memoryBytes: estimateInstanceBytes(variant, ctx.contextTokens, ctx.policy, snapshots?.budgetBytes),
          ...(snapshots
            ? {
                conversations:
                  variant.kvBytesPerToken > 0
                    ? { ...snapshots, kvBytesPerToken: variant.kvBytesPerToken }
                    : snapshots,
              }
            : {}),
          evidence: ev.evidence,
          refSeconds: ev.refSeconds,
          summary: ev.summary,
          ...(precisionReason !== undefined ? { precisionReason } : {}),
        });
      }
    }
  }
  return { candidates: rankCandidates(candidates, constraints), rejected, alternates };
}

const EVIDENCE_ORDER: Record<Evidence['kind'], number> = { measured: 0, prior: 1, static: 2 };

/** Best first: a pinned backend before anything else; then by estimated time for the reference request (measured
 *  numbers, else scaled priors); candidates with neither by the static order. Ties go to stronger evidence, then
 *  the smaller footprint, then the key, so the same inputs always give the same order. */
export function rankCandidates(candidates: readonly Candidate[], constraints: SlotConstraints): Candidate[] {
  const staticRank = (c: Candidate) => (c.evidence.kind === 'static' ? c.evidence.rank : -1);
  return [...candidates].sort((a, b) => {
    const pa = constraints.backend === a.config.backend_type ? 0 : 1;
    const pb = constraints.backend === b.config.backend_type ? 0 : 1;
    if (pa !== pb) return pa - pb;
    const ka = a.refSeconds === undefined ? 1 : 0;
    const kb = b.refSeconds === undefined ? 1 : 0;
    if (ka !== kb) return ka - kb;
    if (a.refSeconds !== undefined && b.refSeconds !== undefined && a.refSeconds !== b.refSeconds)
      return a.refSeconds - b.refSeconds;
    if (staticRank(a) !== staticRank(b)) return staticRank(a) - staticRank(b);
    const ea = EVIDENCE_ORDER[a.evidence.kind];
    const eb = EVIDENCE_ORDER[b.evidence.kind];
    if (ea !== eb) return ea - eb;
    if (a.memoryBytes !== b.memoryBytes) return a.memoryBytes - b.memoryBytes;
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  });
}
