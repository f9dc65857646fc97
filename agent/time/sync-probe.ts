import { statSync } from 'node:fs';
import { join } from 'node:path';

// Whether an NTP client has disciplined the clock since boot. The kernel knows (adjtimex STA_UNSYNC), but Node
// cannot make that syscall without a native helper, and spawning `timedatectl` costs a process per check. The
// image runs systemd-timesyncd, which touches /run/systemd/timesync/synchronized after every successful sync
// (systemd-timesyncd.service(8)); /run is a tmpfs, so the flag cannot survive a reboot and mean a stale sync.
// Other NTP clients (chrony, ntpd) can be plugged in by injecting a different probe.

export interface SyncObservation {
  /** undefined when nothing on this system can tell (no timesyncd): callers fall back to plausibility checks. */
  synchronized: boolean | undefined;
  evidence: string;
}

export type SyncProbe = () => SyncObservation;

export const TIMESYNCD_DIR = 'run/systemd/timesync';
export const TIMESYNCD_FLAG = 'run/systemd/timesync/synchronized';

export function timesyncdProbe(root: string): SyncProbe {
  return () => {
    const flag = join(root, TIMESYNCD_FLAG);
    try {
      statSync(flag);
      return { synchronized: true, evidence: `/${TIMESYNCD_FLAG} exists` };
    } catch {
      // fall through: no flag
    }
    try {
      if (statSync(join(root, TIMESYNCD_DIR)).isDirectory()) {
        return { synchronized: false, evidence: `/${TIMESYNCD_DIR} exists but has no synchronized flag yet` };
      }
    } catch {
      // no timesyncd state at all
    }
    return { synchronized: undefined, evidence: `no /${TIMESYNCD_DIR} (systemd-timesyncd not running)` };
  };
}
