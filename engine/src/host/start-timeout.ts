/**
 * How long an engine host may take to start and load when the caller does not say: 30 s, or
 * MNN_EDGE_HOST_START_TIMEOUT_MS (an emulated board, e.g. the arm64 tier under QEMU, starts Node 10-50x slower).
 */
export function defaultStartTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env['MNN_EDGE_HOST_START_TIMEOUT_MS'];
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : 30_000;
}
