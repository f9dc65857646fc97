// Waiting for a state instead of sleeping for a guessed time: a loaded machine stretches any guess, so tests
// poll for what they expect and give up only after a budget no healthy run comes near.

/** Resolves once `cond` holds, polling every `stepMs`; rejects naming `what` after `timeoutMs` (60 s). */
export async function until(
  cond: () => boolean | Promise<boolean>,
  what: string,
  { timeoutMs = 60_000, stepMs = 1 }: { timeoutMs?: number; stepMs?: number } = {},
): Promise<void> {
  // Under emulation (the arm64 tier) everything is slower by a factor the tier script states.
  timeoutMs *= Number(process.env['MNN_EDGE_TEST_TIME_SCALE'] ?? 1) || 1;
  const started = performance.now();
  while (!(await cond())) {
    const waited = performance.now() - started;
    if (waited > timeoutMs) throw new Error(`still waiting after ${Math.round(waited)} ms for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
