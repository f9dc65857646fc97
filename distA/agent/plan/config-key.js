/** Canonical text of an engine config: the same config always gives the same key, so measurements and loaded
 *  instances can be matched by string equality and shown to people as they are. */
export function configKey(config) {
    const cpus = config.cpus.length > 0 ? compressCpus(config.cpus) : 'any';
    return `${config.backend_type} t${config.thread_num} p:${config.precision} m:${config.memory} cpus:${cpus}`;
}
/** [4,5,6,7,0] → "0,4-7". */
export function compressCpus(cpus) {
    const sorted = [...new Set(cpus)].sort((a, b) => a - b);
    const parts = [];
    let start = sorted[0];
    let prev = start;
    for (const c of [...sorted.slice(1), Number.NaN]) {
        if (start === undefined || prev === undefined)
            break;
        if (c === prev + 1) {
            prev = c;
            continue;
        }
        parts.push(start === prev ? `${start}` : `${start}-${prev}`);
        start = c;
        prev = c;
    }
    return parts.join(',');
}
export function candidateKey(modelId, version, variantId, config) {
    return `${modelId}@${version}/${variantId}|${configKey(config)}`;
}
//# sourceMappingURL=config-key.js.map