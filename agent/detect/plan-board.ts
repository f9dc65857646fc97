import type { BoardProfile, MeasuredPrior } from '../../board-support/types.js';
import type { Capabilities, MnnBackend } from '../../lib/capabilities.js';
import { MnnEdgeError } from '../../lib/errors.js';
import type { BackendAvailability, BackendPrior, BackendType, CpuCluster, PlanBoard } from '../plan/types.js';
import { emulationReason } from './emulation.js';
import { describeEvidence } from './report.js';

// Capabilities (agent/detect) + the matched board-support profile → the planner's PlanBoard.

/** detect's backend names → the LLM engine's backend_type. QNN registers as MNN_FORWARD_NN, which the
 *  engine's config calls "npu"; RKNN is not an LLM backend (it runs whole RKNN graphs), so it has no slot here. */
const TO_PLAN: Partial<Record<MnnBackend, BackendType>> = {
  cpu: 'cpu',
  opencl: 'opencl',
  vulkan: 'vulkan',
  cuda: 'cuda',
  nn: 'npu',
  qnn: 'npu',
  hexagon: 'hexagon',
};

/** Weight bytes of a prior's reference model from its name: "Qwen3.5-2B W4A16" → 2e9 × 4 bit. Priors whose
 *  model size cannot be read are not used: an unscaled number would mislead more than help. */
export function referenceWeightBytes(model: string): number | undefined {
  const params = /(\d+(?:\.\d+)?)\s*([BM])\b/i.exec(model);
  if (!params) return undefined;
  const count = Number(params[1]) * (params[2]!.toUpperCase() === 'B' ? 1e9 : 1e6);
  const bits = /\bW(\d+)A\d+\b/i.exec(model)?.[1] ?? /\b(?:int|q)(\d+)\b/i.exec(model)?.[1];
  const fp = /\b(?:fp|bf)16\b/i.test(model) ? 16 : undefined;
  const b = bits !== undefined ? Number(bits) : fp;
  return b === undefined ? undefined : Math.round((count * b) / 8);
}

export function priorsFromProfile(priors: readonly MeasuredPrior[]): BackendPrior[] {
  const out: BackendPrior[] = [];
  for (const p of priors) {
    const backend = TO_PLAN[p.backend];
    const prefill = p.metrics['prefill_tok_s'];
    const decode = p.metrics['decode_tok_s'];
    const ref = referenceWeightBytes(p.model);
    if (!backend || prefill === undefined || decode === undefined || ref === undefined) continue;
    if (out.some((o) => o.backend === backend)) continue; // the profile lists its best-matching run first
    out.push({
      backend,
      prefillTokPerSec: prefill,
      decodeTokPerSec: decode,
      refWeightBytes: ref,
      source: `${p.engine}, ${p.model}, ${p.workload}`,
    });
  }
  return out;
}

function threadCount(n: number): string {
  return n === 1 ? '1 thread' : `${n} threads`;
}

function threadAdvice(
  caps: Capabilities,
  profile: BoardProfile | null,
  clusters: CpuCluster[],
): PlanBoard['threadAdvice'] {
  if (!profile) return undefined;
  const all = clusters.flatMap((c) => c.cpus);
  switch (profile.threads.placement) {
    case 'all-cores':
      return all.length > 0
        ? {
            threads: all.length,
            cpus: [],
            reason: `${threadCount(all.length)} on all cores: ${profile.threads.advice}`,
          }
        : undefined;
    case 'x-cluster-only': {
      const first = clusters[0];
      return first
        ? {
            threads: first.cpus.length,
            cpus: [...first.cpus],
            reason: `${threadCount(first.cpus.length)} pinned to ${first.name}: ${profile.threads.advice}`,
          }
        : undefined;
    }
    case 'physical-cores': {
      const logical = caps.cpu.logicalCpus.value ?? all.length;
      // cpuinfo does not tell SMT apart here; x86 hosts we target have 2 threads per core.
      const physical =
        caps.cpu.architecture.value === 'x86_64' ? Math.max(1, Math.floor(logical / 2)) : logical;
      return {
        threads: physical,
        cpus: [],
        reason: `${threadCount(physical)}, one per physical core: ${profile.threads.advice}`,
      };
    }
    default:
      return undefined; // big-cluster-first is what chooseThreads does from the clusters
  }
}

function failedStep(b: Capabilities['backends'][number]): { failedStep?: { step: string; detail: string } } {
  const f = b.steps?.find((s) => s.status === 'fail');
  return f && !b.usable ? { failedStep: { step: f.step, detail: b.reasons[0] ?? f.detail } } : {};
}

/** Whether MNN's precision 'low' means fp16 on this CPU. MNN creates its fp16 (Arm82) CPU backend only when the
 *  CPU has fp16 arithmetic and the build has MNN_ARM82, which exists for arm64 alone (CPUBackend::onCreate); on
 *  x86 (even with AVX512-FP16) and RISC-V (even with Zvfh) 'low' runs the fp32 kernels. */
export function cpuFp16(caps: Capabilities): NonNullable<PlanBoard['cpuFp16']> {
  const arch = caps.cpu.architecture.value ?? 'unknown';
  const claim = caps.cpu.features.fp16;
  const why = claim.evidence.slice(0, 2).map(describeEvidence).join('; ');
  if (arch !== 'aarch64')
    return {
      available: false,
      reason:
        `${arch}${claim.value === true ? ` (fp16 present: ${why})` : ''}: MNN's fp16 CPU backend (Arm82) exists ` +
        `for arm64 only, so precision low runs the fp32 kernels here`,
    };
  if (claim.value === true)
    return {
      available: true,
      reason: `aarch64 with fp16 arithmetic (${why}): precision low runs MNN's Arm82 fp16 kernels`,
    };
  return {
    available: false,
    reason:
      claim.value === false
        ? `aarch64 without fp16 arithmetic (${why}): precision low runs the fp32 NEON kernels`
        : `fp16 arithmetic of this aarch64 CPU is unknown (${why}): no fp16 candidate`,
  };
}

export function boardFromCapabilities(
  caps: Capabilities,
  profile: BoardProfile | null,
  options: { ramBytes?: number } = {},
): PlanBoard {
  const ramBytes = caps.memory.totalBytes.value ?? options.ramBytes;
  if (ramBytes === undefined || ramBytes === null)
    throw new MnnEdgeError(
      'ENORAM',
      `Board RAM is unknown (no MemTotal in ${caps.root.replace(/\/$/, '')}/proc/meminfo): cannot size the memory budget`,
    );
  const clusters: CpuCluster[] = caps.cpu.clusters.map((c, i) => ({
    name: c.core ?? `cluster${i}`,
    cpus: [...c.cpus],
    maxFreqKHz: c.maxFreqKHz ?? 0,
  }));
  const backends = new Map<BackendType, BackendAvailability>();
  for (const b of caps.backends) {
    const backend = TO_PLAN[b.backend];
    if (!backend) continue;
    const prev = backends.get(backend);
    const reason = b.reasons.join('; ');
    // Two detect backends can mean one engine backend (nn, qnn → npu): usable if either is.
    if (!prev || (!prev.available && b.usable))
      backends.set(backend, {
        backend,
        available: b.usable,
        reason,
        ...(b.deviceKind === 'software' ? { software: true } : {}),
        ...failedStep(b),
      });
  }
  const family = caps.soc.family.value ?? caps.cpu.architecture.value ?? 'unknown';
  const soc = caps.soc.name.value;
  const advice = threadAdvice(caps, profile, clusters);
  const emulated = emulationReason(caps);
  return {
    // Probes are keyed by board id: an emulated run's timings never count as the board's.
    boardId: (soc ? `${family}/${soc}` : family) + (emulated ? '+emulated' : ''),
    ramBytes,
    cpuClusters: clusters,
    backends: [...backends.values()],
    priors: profile ? priorsFromProfile(profile.priors) : [],
    ...(advice ? { threadAdvice: advice } : {}),
    cpuFp16: cpuFp16(caps),
    ...(emulated ? { emulated } : {}),
  };
}
