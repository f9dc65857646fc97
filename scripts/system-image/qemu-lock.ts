// The machine-wide QEMU lock: one arm64 guest at a time on a shared machine (the system tier and the power-cut
// runs both boot one, and two TCG guests on two cores would each take more than twice as long). Held only around
// the boot, so building the packages does not keep another run waiting.
import { spawn } from 'node:child_process';

export const QEMU_LOCK = process.env['MNN_EDGE_QEMU_LOCK'] ?? '/tmp/mnn-edge-qemu.lock';

export interface HeldLock {
  release: () => Promise<void>;
}

/** Waits, without a bound (the other holder's run ends), for the lock. `flock` holds it for as long as its
 *  `cat` runs: closing cat's stdin releases it, and so does this process dying. */
export async function takeQemuLock(log: (line: string) => void): Promise<HeldLock> {
  const child = spawn('flock', [QEMU_LOCK, 'sh', '-c', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const since = Date.now();
  const tell = setInterval(
    () => log(`waiting for ${QEMU_LOCK} (${((Date.now() - since) / 1000).toFixed(0)} s)`),
    60_000,
  );
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout?.once('data', () => resolve());
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`flock ${QEMU_LOCK} exited (${code})`)));
    });
  } finally {
    clearInterval(tell);
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    release: async () => {
      child.stdin?.end();
      await exited;
    },
  };
}
