import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
/**
 * The mnn-edge package directory above `from` (the folder with its package.json). Code that finds files by
 * where it runs must not count folders: it runs from source (engine/src), from tsc's dist/ tree, and bundled
 * into dist/agent/cli, and the package directory is the one anchor all three share.
 */
export function packageRootAbove(from) {
    for (let dir = from;; dir = dirname(dir)) {
        const pkg = join(dir, 'package.json');
        if (existsSync(pkg)) {
            try {
                if (JSON.parse(readFileSync(pkg, 'utf8')).name === 'mnn-edge')
                    return dir;
            }
            catch {
                // unreadable or not JSON: not ours, keep climbing
            }
        }
        if (dirname(dir) === dir)
            return undefined;
    }
}
//# sourceMappingURL=package-root.js.map