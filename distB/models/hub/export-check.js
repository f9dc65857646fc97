import { MnnEdgeError } from '../../agent/common/errors.js';
import { PACKAGE_PATH_PATTERN } from '../manifest/schema.js';
const PATH_OK = new RegExp(PACKAGE_PATH_PATTERN);
/** Refuses listings with names that could leave the package directory; `..`, absolute paths and the like are
 *  an attack or a broken hub, never something to work around. */
export function checkListing(snapshot) {
    const files = [];
    const skipped = [];
    const seen = new Set();
    for (const f of snapshot.files) {
        const p = f.path;
        const shown = JSON.stringify(p.slice(0, 200));
        if (p.includes('\0') || p.includes('\\') || p.startsWith('/') || /^[A-Za-z]:/.test(p))
            throw new MnnEdgeError('EHUBFILENAME', `The hub lists a file with an absolute or unsafe path: ${shown}; refused`, { path: p });
        if (p.split('/').some((s) => s === '..' || s === '.' || s === ''))
            throw new MnnEdgeError('EHUBFILENAME', `The hub lists a file whose path leaves the package (..): ${shown}; refused`, { path: p });
        if (!Number.isSafeInteger(f.size) || f.size < 0)
            throw new MnnEdgeError('EHUBRESPONSE', `The hub lists ${shown} with an impossible size ${f.size}`);
        if (seen.has(p))
            throw new MnnEdgeError('EHUBRESPONSE', `The hub lists ${shown} twice`);
        seen.add(p);
        const base = p.split('/').at(-1);
        if (base.startsWith('.git') || p === 'mnn-edge.json' || !PATH_OK.test(p)) {
            skipped.push(p);
            continue;
        }
        files.push(f);
    }
    return { files, skipped };
}
export function requireMnnExport(snapshot, files) {
    const names = new Set(files.map((f) => f.path));
    const missing = [];
    if (!names.has('config.json'))
        missing.push('config.json');
    if (![...names].some((n) => n.endsWith('.mnn')))
        missing.push('.mnn graph');
    if (missing.length === 0)
        return;
    const has = [...names].slice(0, 8).join(', ') || 'no files';
    throw new MnnEdgeError('EHUBNOTMNN', `${snapshot.ref.owner}/${snapshot.ref.name}@${snapshot.commit.slice(0, 12)} is not an MNN export: it has no ${missing.join(' and no ')} (it has ${has}${names.size > 8 ? ', …' : ''})`, { missing });
}
function obj(buf) {
    if (buf === undefined)
        return undefined;
    try {
        const v = JSON.parse(buf.toString('utf8'));
        return typeof v === 'object' && v !== null && !Array.isArray(v)
            ? v
            : undefined;
    }
    catch {
        return undefined;
    }
}
const KIND_TASK = {
    text: 'llm',
    vision: 'vlm',
    audio: 'omni',
    talker: 'omni',
    asr: 'asr',
    other: undefined,
};
export function describeExport(repo, files, configJson, llmConfigJson) {
    const config = obj(configJson);
    const llm = obj(llmConfigJson);
    const names = new Set(files.map((f) => f.path));
    const str = (v) => (typeof v === 'string' && v !== '' ? v : undefined);
    const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
    const has = (key, file) => str(config?.[key]) !== undefined || names.has(file);
    let kind;
    if (has('talker_model', 'talker.mnn') || llm?.['has_talker'] === true)
        kind = 'talker';
    else if (has('audio_model', 'audio.mnn') || llm?.['is_audio'] === true)
        kind = 'audio';
    else if (has('visual_model', 'visual.mnn') || llm?.['is_visual'] === true)
        kind = 'vision';
    else if (has('llm_model', 'llm.mnn'))
        kind = 'text';
    else if (/asr|sensevoice|whisper|paraformer/i.test(repo))
        kind = 'asr';
    else
        kind = 'other';
    const bits = num(config?.['quant_bit']) ?? num(llm?.['quant_bit']);
    const named = /(?:^|[-_.])(int4|int8|fp16|bf16|fp32|q4|q8|4bit|8bit)(?:$|[-_.])/i
        .exec(repo)?.[1]
        ?.toLowerCase();
    const quant = bits !== undefined
        ? `int${bits}`
        : named === undefined
            ? undefined
            : ({ q4: 'int4', '4bit': 'int4', q8: 'int8', '8bit': 'int8' }[named] ??
                named);
    const hidden = num(llm?.['hidden_size']);
    const layers = num(llm?.['layer_nums']);
    const context = num(llm?.['max_position_embeddings']);
    return {
        kind,
        task: KIND_TASK[kind],
        ...(quant !== undefined ? { quant } : {}),
        ...(hidden !== undefined ? { hiddenSize: hidden } : {}),
        ...(layers !== undefined ? { layers } : {}),
        ...(context !== undefined ? { contextLength: context } : {}),
        backend: str(config?.['backend_type']) ?? 'cpu',
        weightBytes: files.filter((f) => /\.(mnn|weight|bin)$/.test(f.path)).reduce((a, f) => a + f.size, 0),
    };
}
//# sourceMappingURL=export-check.js.map