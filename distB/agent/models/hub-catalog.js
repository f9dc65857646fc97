import { describeRepos } from '../../models/hub/describe.js';
import { installedFromHub } from '../../models/hub/pull.js';
import { budgetReason, RECOMMEND_ROLES, recommend, } from '../plan/recommend.js';
// What the hubs offer, as `models search` / `models recommend` and the dashboard's "Get models" show it: the
// search hits described from their file lists and configs (no weights fetched), and the same hits ranked per
// role for this board by the planner's own memory estimate and speed evidence.
export function hubPrefix(hub) {
    return hub === 'huggingface' ? 'hf' : 'ms';
}
export async function searchHub(client, query, store, signal) {
    const hits = await client.search([...query.words], { owner: query.owner, limit: query.limit }, signal);
    const described = await describeRepos(client, hits, signal ? { signal } : {});
    const listings = described.map((d) => {
        const mine = store ? installedFromHub(store, client.hub, d.hit.repo).at(-1) : undefined;
        return {
            source: `${hubPrefix(client.hub)}://${d.hit.repo}`,
            repo: d.hit.repo,
            ...(d.totalBytes !== undefined ? { sizeBytes: d.totalBytes } : {}),
            ...(d.export?.task !== undefined ? { task: d.export.task } : {}),
            ...(d.export ? { kind: d.export.kind, builtFor: d.export.backend } : {}),
            ...(d.export?.quant !== undefined ? { quant: d.export.quant } : {}),
            ...(d.hit.downloads !== undefined ? { downloads: d.hit.downloads } : {}),
            ...(d.problem !== undefined ? { problem: d.problem } : {}),
            ...(mine ? { installed: `${mine.id}@${mine.version}` } : {}),
        };
    });
    return { described, listings };
}
/** The described repositories the recommender can rank (LLM, VLM, omni and ASR exports). */
export function hubCandidates(described, hub, store) {
    const out = [];
    for (const d of described) {
        const e = d.export;
        if (!e?.task || !['llm', 'vlm', 'omni', 'asr'].includes(e.task))
            continue;
        const installed = store ? installedFromHub(store, hub, d.hit.repo).at(-1) : undefined;
        out.push({
            repo: d.hit.repo,
            kind: e.task,
            builtFor: e.backend,
            ...(e.quant !== undefined ? { quant: e.quant } : {}),
            weightBytes: e.weightBytes,
            // fp16 K and V per layer over the hidden width, as the manifest derivation estimates it.
            kvBytesPerToken: e.hiddenSize !== undefined && e.layers !== undefined ? 2 * e.layers * e.hiddenSize * 2 : 0,
            ...(installed
                ? {
                    installed: {
                        id: installed.id,
                        version: installed.version,
                        variantId: installed.manifest.variants[0].name,
                    },
                }
                : {}),
        });
    }
    return out;
}
export function recommendFor(described, hub, store, context, roles = RECOMMEND_ROLES) {
    const candidates = hubCandidates(described, hub, store);
    const probes = context.probes.filter((p) => p.boardId === context.board.boardId);
    const ranked = recommend({ ...context, probes, candidates }, roles);
    return {
        board: context.board.boardId,
        budget: budgetReason(context.board, context.policy),
        recommendations: ranked.map((r) => ({ ...r, source: `${hubPrefix(hub)}://${r.repo}` })),
    };
}
//# sourceMappingURL=hub-catalog.js.map