import { type DescribedRepo, describeRepos } from '../../models/hub/describe.js';
import { installedFromHub } from '../../models/hub/pull.js';
import type { HubClient } from '../../models/hub/types.js';
import type { HubName } from '../../models/manifest/types.js';
import type { ModelStore } from '../../models/store/model-store.js';
import {
  budgetReason,
  type HubCandidate,
  RECOMMEND_ROLES,
  type Recommendation,
  type RecommendRole,
  recommend,
} from '../plan/recommend.js';
import type { PlanBoard, PlanPolicy, ProbeResult } from '../plan/types.js';

// What the hubs offer, as `models search` / `models recommend` and the dashboard's "Get models" show it: the
// search hits described from their file lists and configs (no weights fetched), and the same hits ranked per
// role for this board by the planner's own memory estimate and speed evidence.

export function hubPrefix(hub: HubName): 'hf' | 'ms' {
  return hub === 'huggingface' ? 'hf' : 'ms';
}

/** One search hit as a person reads it. */
export interface HubListing {
  /** hf://owner/name or ms://owner/name: what to pull. */
  source: string;
  repo: string;
  sizeBytes?: number;
  task?: string;
  /** The export's kind (text, vision, audio, talker, asr, other). */
  kind?: string;
  quant?: string;
  /** The backend the export was built for (cpu, opencl, qnn …). */
  builtFor?: string;
  downloads?: number;
  /** Why it cannot be pulled as an MNN export, or could not be read. */
  problem?: string;
  /** id@version when this repository is installed already. */
  installed?: string;
}

export async function searchHub(
  client: HubClient,
  query: { words: readonly string[]; owner: string; limit: number },
  store?: ModelStore,
  signal?: AbortSignal,
): Promise<{ described: DescribedRepo[]; listings: HubListing[] }> {
  const hits = await client.search([...query.words], { owner: query.owner, limit: query.limit }, signal);
  const described = await describeRepos(client, hits, signal ? { signal } : {});
  const listings = described.map((d): HubListing => {
    const mine = store ? installedFromHub(store, client.hub, d.hit.repo).at(-1) : undefined;
    return {
      source: `${hubPrefix(client.hub)}://${d.hit.repo}`,
      repo: d.hit.repo,
      ...(d.totalBytes !== undefined ? { sizeBytes: d.totalBytes } : {}),
      ...(d.export?.task !== undefined ? { task: d.export.task } : {}),
      ...(d.export ? { kind: d.export.kind, builtFor: d.export.backend } : {}),
      ...(d.export?.quant !== undefined ? { quant: d.export.quant } : {}),
      ...(d.hit.downloads !== undefined ? { downloads: d.hit.downloads } : {}),
      ...(d.problem !== undefined ? { problem: d.problem } : {}),
      ...(mine ? { installed: `${mine.id}@${mine.version}` } : {}),
    };
  });
  return { described, listings };
}

/** The described repositories the recommender can rank (LLM, VLM, omni and ASR exports). */
export function hubCandidates(
  described: readonly DescribedRepo[],
  hub: HubName,
  store: ModelStore | undefined,
): HubCandidate[] {
  const out: HubCandidate[] = [];
  for (const d of described) {
    const e = d.export;
    if (!e?.task || !['llm', 'vlm', 'omni', 'asr'].includes(e.task)) continue;
    const installed = store ? installedFromHub(store, hub, d.hit.repo).at(-1) : undefined;
    out.push({
      repo: d.hit.repo,
      kind: e.task as HubCandidate['kind'],
      builtFor: e.backend,
      ...(e.quant !== undefined ? { quant: e.quant } : {}),
      weightBytes: e.weightBytes,
      // fp16 K and V per layer over the hidden width, as the manifest derivation estimates it.
      kvBytesPerToken:
        e.hiddenSize !== undefined && e.layers !== undefined ? 2 * e.layers * e.hiddenSize * 2 : 0,
      ...(installed
        ? {
            installed: {
              id: installed.id,
              version: installed.version,
              variantId: installed.manifest.variants[0]!.name,
            },
          }
        : {}),
    });
  }
  return out;
}

export interface HubRecommendations {
  board: string;
  /** The memory budget in words, with its numbers. */
  budget: string;
  recommendations: Array<Recommendation & { source: string }>;
}

/** The board as planned, its policy and measured probes: what a recommendation is made for. */
export interface RecommendContext {
  board: PlanBoard;
  policy: PlanPolicy;
  probes: readonly ProbeResult[];
  engineVersion: string;
  contextTokens: Record<RecommendRole, number>;
}

export function recommendFor(
  described: readonly DescribedRepo[],
  hub: HubName,
  store: ModelStore | undefined,
  context: RecommendContext,
  roles: readonly RecommendRole[] = RECOMMEND_ROLES,
): HubRecommendations {
  const candidates = hubCandidates(described, hub, store);
  const probes = context.probes.filter((p) => p.boardId === context.board.boardId);
  const ranked = recommend({ ...context, probes, candidates }, roles);
  return {
    board: context.board.boardId,
    budget: budgetReason(context.board, context.policy),
    recommendations: ranked.map((r) => ({ ...r, source: `${hubPrefix(hub)}://${r.repo}` })),
  };
}
