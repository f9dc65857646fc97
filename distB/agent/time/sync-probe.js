import { statSync } from 'node:fs';
import { join } from 'node:path';
export const TIMESYNCD_DIR = 'run/systemd/timesync';
export const TIMESYNCD_FLAG = 'run/systemd/timesync/synchronized';
export function timesyncdProbe(root) {
    return () => {
        const flag = join(root, TIMESYNCD_FLAG);
        try {
            statSync(flag);
            return { synchronized: true, evidence: `/${TIMESYNCD_FLAG} exists` };
        }
        catch {
            // fall through: no flag
        }
        try {
            if (statSync(join(root, TIMESYNCD_DIR)).isDirectory()) {
                return { synchronized: false, evidence: `/${TIMESYNCD_DIR} exists but has no synchronized flag yet` };
            }
        }
        catch {
            // no timesyncd state at all
        }
        return { synchronized: undefined, evidence: `no /${TIMESYNCD_DIR} (systemd-timesyncd not running)` };
    };
}
//# sourceMappingURL=sync-probe.js.map