import type {
  CatalogVariant,
  ConversationSnapshots,
  MemoryBudget,
  ModelKind,
  PlanBoard,
  PlanPolicy,
} from './types.js';

export const MiB = 1024 * 1024;

export function mib(bytes: number): string {
  const v = bytes / MiB;
  // Small models (and the test fixtures) would all read "0 MiB" when rounded.
  return Math.abs(v) < 10 && v !== Math.round(v) ? `${v.toFixed(1)} MiB` : `${Math.round(v)} MiB`;
}

/** What one loaded instance of a variant is expected to hold: its weights, a KV cache for the context the slot
 *  needs, and the engine's fixed overhead. Weights are counted once per instance, whichever backend runs it:
 *  on the boards we target accelerators share the system RAM. */
export function estimateInstanceBytes(
  variant: CatalogVariant,
  contextTokens: number,
  policy: PlanPolicy,
  snapshotBytes = 0,
): number {
  return (
    variant.weightBytes +
    variant.kvBytesPerToken * contextTokens +
    policy.instanceOverheadBytes +
    snapshotBytes
  );
}

/** The conversation snapshots an instance of this kind keeps: text LLMs only (MNN makes extra contexts as plain
 *  LLMs, without an omni model's encoders or talker); none when the policy keeps one conversation. */
export function snapshotsFor(kind: ModelKind, policy: PlanPolicy): ConversationSnapshots | undefined {
  const s = policy.conversationSnapshots;
  return kind === 'llm' && s.max > 1 ? s : undefined;
}

export function memoryBudget(board: PlanBoard, policy: PlanPolicy): Omit<MemoryBudget, 'plannedBytes'> {
  const share = Math.floor(board.ramBytes * policy.budgetFraction);
  const budgetBytes = Math.max(0, share - policy.reserveBytes);
  return {
    ramBytes: board.ramBytes,
    budgetBytes,
    reason:
      `budget ${mib(budgetBytes)} = ${Math.round(policy.budgetFraction * 100)} % of ${mib(board.ramBytes)} RAM ` +
      `− ${mib(policy.reserveBytes)} reserved for the agent and OS`,
  };
}
