import type { Capabilities } from '../../lib/capabilities.js';

// Whether this process runs on the CPU it measures. Under QEMU user mode an arm64 process sees the host's
// /proc/cpuinfo while its auxiliary vector is the emulated CPU's (detect() then takes the process's architecture
// and says so on the architecture claim). Correctness there is the board's; speed is the emulator's, so the
// planner must not choose by timings taken there.

/** The rule detect() writes on the architecture claim when /proc/cpuinfo describes another CPU than this process. */
export function foreignCpuinfoRule(
  mine: string,
  processArch: string,
  cpuinfoArch: string,
  because: string,
): string {
  return `this process is ${mine} (process.arch ${processArch}) while /proc/cpuinfo describes ${cpuinfoArch} (${because}): the file is another CPU's (QEMU user mode shows the host's), so CPU features come from /proc/self/auxv`;
}

const FOREIGN = /^this process is (\S+) \(process\.arch \S+\) while \/proc\/cpuinfo describes (\S+) /;

/** Why timings taken by this process are not the board's, or undefined on real hardware. */
export function emulationReason(caps: Capabilities): string | undefined {
  for (const e of caps.cpu.architecture.evidence) {
    if (e.kind !== 'inferred') continue;
    const m = FOREIGN.exec(e.rule);
    if (m)
      return `emulated: this ${m[1]} process runs on a ${m[2]} machine (QEMU user mode: /proc/cpuinfo is the host's), so speeds measured here are the emulator's, not the board's`;
  }
  return undefined;
}
