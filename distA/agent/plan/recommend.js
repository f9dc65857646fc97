import { enumerateCandidates } from './candidates.js';
import { memoryBudget, mib } from './memory.js';
export const RECOMMEND_ROLES = [
    'voice.llm',
    'voice.omni',
    'vision.vlm',
    'voice.asr',
];
const ROLE_KIND = {
    'voice.llm': 'llm',
    'voice.omni': 'omni',
    'vision.vlm': 'vlm',
    'voice.asr': 'asr',
};
/** Decode speed below which a role feels broken: a voice reply should keep up with speech. */
const MIN_DECODE_TOK_S = {
    'voice.llm': 8,
    'voice.omni': 8,
    'vision.vlm': 3,
    'voice.asr': 0,
};
/** A generic graph runs wherever MNN runs; a QNN or Hexagon build only on that accelerator. */
function backendsFor(builtFor) {
    switch (builtFor) {
        case 'qnn':
        case 'npu':
        case 'nnapi':
            return ['npu'];
        case 'hexagon':
            return ['hexagon'];
        default:
            return ['cpu', 'opencl', 'vulkan', 'cuda'];
    }
}
function decodeOf(c) {
    if (c.evidence.kind === 'measured')
        return c.evidence.probe.decodeTokPerSec;
    if (c.evidence.kind === 'prior')
        return c.evidence.decodeTokPerSec;
    return undefined;
}
function one(role, hub, input, budgetBytes) {
    const model = {
        id: hub.installed?.id ?? hub.repo,
        version: hub.installed?.version ?? 'hub',
        kind: hub.kind,
        variants: [
            {
                variantId: hub.installed?.variantId ?? `${hub.builtFor}-${hub.quant ?? 'default'}`,
                quant: hub.quant ?? 'unknown',
                weightBytes: hub.weightBytes,
                kvBytesPerToken: hub.kvBytesPerToken,
                backends: backendsFor(hub.builtFor),
                configPath: '',
            },
        ],
    };
    const { candidates, rejected } = enumerateCandidates(model, {}, {
        board: input.board,
        policy: input.policy,
        probes: input.probes,
        engineVersion: input.engineVersion,
        contextTokens: input.contextTokens[role],
    });
    const base = { role, repo: hub.repo, ...(hub.quant !== undefined ? { quant: hub.quant } : {}) };
    const best = candidates[0];
    if (best === undefined)
        return {
            ...base,
            fits: false,
            memoryBytes: 0,
            evidence: 'none',
            reasons: [
                `no usable backend on this board for a ${hub.builtFor} build`,
                ...rejected.slice(0, 3).map((r) => `${r.what}: ${r.reason}`),
            ],
        };
    const fits = best.memoryBytes <= budgetBytes;
    const decode = decodeOf(best);
    const reasons = [
        fits
            ? `fits: ${mib(best.memoryBytes)} with a ${input.contextTokens[role]}-token KV cache, budget ${mib(budgetBytes)}`
            : `too big: needs ${mib(best.memoryBytes)} with a ${input.contextTokens[role]}-token KV cache, budget ${mib(budgetBytes)}`,
        `runs on ${best.config.backend_type}${hub.builtFor !== 'cpu' ? ` (built for ${hub.builtFor})` : ''}`,
        best.summary,
    ];
    const floor = MIN_DECODE_TOK_S[role];
    if (decode !== undefined && floor > 0 && decode < floor)
        reasons.push(`expected ${decode.toFixed(1)} tok/s is below the ${floor} tok/s a ${role} reply needs`);
    return {
        ...base,
        fits,
        memoryBytes: best.memoryBytes,
        backend: best.config.backend_type,
        ...(decode !== undefined ? { decodeTokPerSec: decode } : {}),
        evidence: best.evidence.kind,
        reasons,
    };
}
/** Rank: fits and fast enough (the biggest such model first: more weights, more capable), then fits with
 *  unknown or low speed, then too big or unusable. */
function tier(r) {
    if (!r.fits)
        return r.evidence === 'none' ? 4 : 3;
    const floor = MIN_DECODE_TOK_S[r.role];
    if (r.decodeTokPerSec === undefined)
        return 1;
    return r.decodeTokPerSec >= floor ? 0 : 2;
}
export function recommend(input, roles = RECOMMEND_ROLES) {
    const { budgetBytes } = memoryBudget(input.board, input.policy);
    const out = [];
    for (const role of roles) {
        const matching = input.candidates.filter((c) => c.kind === ROLE_KIND[role]);
        const ranked = matching
            .map((c) => one(role, c, input, budgetBytes))
            .sort((a, b) => tier(a) - tier(b) || b.memoryBytes - a.memoryBytes || (a.repo < b.repo ? -1 : 1));
        out.push(...ranked);
    }
    return out;
}
export function budgetReason(board, policy) {
    return memoryBudget(board, policy).reason;
}
//# sourceMappingURL=recommend.js.map