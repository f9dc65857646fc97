/** Decode is memory-bound and MNN's CPU kernels split work evenly between threads, so a thread on a slow core
 *  holds the fast ones back: use the fastest cluster only, one thread per core. */
export function chooseThreads(board) {
    if (board.threadAdvice)
        return { ...board.threadAdvice };
    const clusters = [...board.cpuClusters].filter((c) => c.cpus.length > 0);
    if (clusters.length === 0)
        return { threads: 1, cpus: [], reason: 'no CPU topology known: 1 thread' };
    clusters.sort((a, b) => b.maxFreqKHz - a.maxFreqKHz || b.cpus.length - a.cpus.length);
    const best = clusters[0];
    const ghz = (best.maxFreqKHz / 1e6).toFixed(2);
    // Prime + big clusters of one core type (QCS6490: 1 × A78 at 2.7 GHz + 3 × A78 at 2.4 GHz) run together.
    const sameType = clusters.filter((c) => c.name === best.name);
    if (sameType.length > 1 && sameType.length < clusters.length) {
        const cpus = sameType.flatMap((c) => c.cpus).sort((a, b) => a - b);
        return {
            threads: cpus.length,
            cpus,
            reason: `${cpus.length} threads pinned to the ${best.name} cores (${sameType.length} clusters, up to ${ghz} GHz); ` +
                `the other ${clusters.length - sameType.length} cluster(s) would hold them back`,
        };
    }
    if (clusters.length === 1) {
        return {
            threads: best.cpus.length,
            cpus: [],
            reason: `${best.cpus.length} threads: one per core of the single cluster ${best.name} (${ghz} GHz)`,
        };
    }
    return {
        threads: best.cpus.length,
        cpus: [...best.cpus],
        reason: `${best.cpus.length} threads pinned to the fastest cluster ${best.name} (${ghz} GHz) of ${clusters.length}`,
    };
}
//# sourceMappingURL=threads.js.map