import { errorMessage } from '../../agent/common/errors.js';
import { checkListing, describeExport, requireMnnExport } from './export-check.js';
async function describeOne(client, hit, signal) {
    try {
        const snapshot = await client.snapshot(hit.ref, signal);
        const { files } = checkListing(snapshot);
        requireMnnExport(snapshot, files);
        const has = (p) => files.some((f) => f.path === p);
        const [config, llmConfig] = await Promise.all([
            has('config.json') ? client.readSmallFile(snapshot, 'config.json', signal) : undefined,
            has('llm_config.json') ? client.readSmallFile(snapshot, 'llm_config.json', signal) : undefined,
        ]);
        return {
            hit,
            commit: snapshot.commit,
            totalBytes: files.reduce((a, f) => a + f.size, 0),
            export: describeExport(hit.repo, files, config, llmConfig),
        };
    }
    catch (err) {
        if (signal?.aborted)
            throw err;
        return { hit, problem: errorMessage(err) };
    }
}
/** Reads up to `concurrency` repositories at a time, keeping the hits' order. */
export async function describeRepos(client, hits, options = {}) {
    const out = new Array(hits.length);
    let next = 0;
    const worker = async () => {
        while (next < hits.length) {
            const i = next++;
            out[i] = await describeOne(client, hits[i], options.signal);
        }
    };
    await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 4, hits.length) }, worker));
    return out;
}
//# sourceMappingURL=describe.js.map