import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
// Where the runtime keeps GPU kernel caches of installed models: <dataDir>/gpu-cache/<id>/<version>/… The store
// owns the layout's first two levels so that disk accounting and removal see the caches with their package.
export const GPU_CACHE_DIR = 'gpu-cache';
export const safeSegment = (s) => s.replace(/[^A-Za-z0-9._+-]/g, '_');
export function modelGpuCacheDir(dataDir, ref) {
    return join(dataDir, GPU_CACHE_DIR, safeSegment(ref.id), safeSegment(ref.version));
}
function dirBytes(dir) {
    let total = 0;
    let names;
    try {
        names = readdirSync(dir);
    }
    catch {
        return 0;
    }
    for (const n of names) {
        const p = join(dir, n);
        try {
            const st = statSync(p);
            total += st.isDirectory() ? dirBytes(p) : st.size;
        }
        catch {
            // Removed while we counted: it no longer takes space.
        }
    }
    return total;
}
/** Bytes of every GPU cache of one model version (all variants, backends and MNN versions). */
export function gpuCacheBytes(dataDir, ref) {
    return dirBytes(modelGpuCacheDir(dataDir, ref));
}
export function removeGpuCaches(dataDir, ref) {
    rmSync(modelGpuCacheDir(dataDir, ref), { recursive: true, force: true });
}
//# sourceMappingURL=gpu-cache-layout.js.map