import { setPriority } from 'node:os';
import type { Clock } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import { enumerateCandidates } from '../../plan/candidates.js';
import { configKey } from '../../plan/config-key.js';
import type { Candidate, PlanBoard, PlanCatalog, PlanPolicy, ProbeResult } from '../../plan/types.js';
import type { EngineHostFactory, GenerateStats, InstanceSpec } from '../engine/engine-port.js';

/** The fixed probe: the same prompt and length on every board, so numbers compare across boards and runs. */
export const PROBE_PROMPT =
  'You are a helpful assistant on a small device. In three short sentences, describe a quiet morning in a ' +
  'village by the sea: the light, the sounds, and what people are doing.';
export const PROBE_DECODE_TOKENS = 32;

export interface ProbeContext {
  hosts: EngineHostFactory;
  boardId: string;
  clock: Clock;
  signal?: AbortSignal;
  /** Background probes run niced so serving requests keep the CPU. */
  lowPriority?: boolean;
  /** For the nice call; os.setPriority by default. */
  renice?: (pid: number, priority: number) => void;
}

/**
 * One probe of one candidate in its own engine host: load time, a warm-up, then prefill and decode speed on
 * the fixed prompt, and the host's peak RSS. A failure is a result too (ok: false, with the error): the
 * planner then rules the candidate out on this board until the next probe.
 */
export async function probeCandidate(spec: InstanceSpec, ctx: ProbeContext): Promise<ProbeResult> {
  const base = {
    modelId: spec.modelId,
    version: spec.version,
    variantId: spec.variantId,
    config: configKey(spec.config),
    engineVersion: ctx.hosts.engineVersion,
    boardId: ctx.boardId,
  };
  const failed = (error: string, loadMs = 0): ProbeResult => ({
    ...base,
    ok: false,
    loadMs,
    prefillTokPerSec: 0,
    decodeTokPerSec: 0,
    peakRssBytes: 0,
    measuredAt: ctx.clock.nowMs(),
    error,
  });
  let host: Awaited<ReturnType<EngineHostFactory['start']>>;
  try {
    host = await ctx.hosts.start({ label: `probe ${spec.key}`, cpus: spec.config.cpus }, ctx.signal);
  } catch (err) {
    return failed(`engine host did not start: ${errorMessage(err)}`);
  }
  let loadMs = 0;
  try {
    if (ctx.lowPriority) {
      try {
        (ctx.renice ?? setPriority)(host.pid, 10);
      } catch {
        // Not permitted (or not Linux): the probe still runs, only at normal priority.
      }
    }
    const t0 = ctx.clock.monotonicMs();
    // The model alone: conversation contexts made at load would count in its load time and peak RSS.
    const { conversations: _contexts, ...model } = spec;
    await host.load(model, ctx.signal);
    loadMs = ctx.clock.monotonicMs() - t0;
    for await (const _ of host.generate({ prompt: 'Hello', maxNewTokens: 2 }, ctx.signal)) {
      // warm-up: first-run allocations and kernel selection stay out of the numbers
    }
    let stats: GenerateStats | undefined;
    for await (const ev of host.generate(
      { prompt: PROBE_PROMPT, maxNewTokens: PROBE_DECODE_TOKENS },
      ctx.signal,
    ))
      if (ev.type === 'done') stats = ev.stats;
    if (!stats || stats.prefillMs <= 0 || stats.decodeMs <= 0 || stats.decodeTokens === 0)
      return failed('the engine reported no timing for the probe generation', loadMs);
    const mem = await host.memory();
    return {
      ...base,
      ok: true,
      loadMs,
      prefillTokPerSec: stats.promptTokens / (stats.prefillMs / 1000),
      decodeTokPerSec: stats.decodeTokens / (stats.decodeMs / 1000),
      peakRssBytes: mem.peakRssBytes,
      measuredAt: ctx.clock.nowMs(),
    };
  } catch (err) {
    ctx.signal?.throwIfAborted();
    return failed(errorMessage(err), loadMs);
  } finally {
    await host.stop().catch(() => undefined);
  }
}

/** Every (variant, backend) candidate the planner could choose for the models, in the configs it would use. */
export function probeCandidates(
  board: PlanBoard,
  catalog: PlanCatalog,
  policy: PlanPolicy,
  engineVersion: string,
  filter: { modelId?: string; version?: string } = {},
): Candidate[] {
  const out: Candidate[] = [];
  for (const model of catalog.models) {
    if (filter.modelId !== undefined && model.id !== filter.modelId) continue;
    if (filter.version !== undefined && model.version !== filter.version) continue;
    // The probe measures token speed; a VAD or a wake-word model has no tokens and costs a fraction of a millisecond per frame.
    if (model.kind === 'vad' || model.kind === 'wake') continue;
    const { candidates } = enumerateCandidates(
      model,
      {},
      // Both precisions on a CPU with fp16 arithmetic: the planner chooses between them by these numbers.
      { board, policy, probes: [], engineVersion, contextTokens: 0, everyPrecision: true },
    );
    out.push(...candidates);
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
