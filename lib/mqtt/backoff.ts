// How long a client waits before its next connection attempt: the device's broker link and the operator's tools.

/** Full jitter: a uniform delay in [min, min(max, min·2^attempt)]. */
export function backoffDelay(
  attempt: number,
  range: { minMs: number; maxMs: number },
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(range.maxMs, range.minMs * 2 ** Math.min(attempt, 30));
  return Math.round(range.minMs + random() * Math.max(0, ceiling - range.minMs));
}
