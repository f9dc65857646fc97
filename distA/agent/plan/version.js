/** Orders version strings the way people read them: numeric parts numerically ("1.10" > "1.9"), a pre-release
 *  ("2.0.0-rc1") before its release. */
export function compareVersions(a, b) {
    const [ma, pa] = splitPre(a);
    const [mb, pb] = splitPre(b);
    const xa = ma.split('.');
    const xb = mb.split('.');
    for (let i = 0; i < Math.max(xa.length, xb.length); i++) {
        const c = comparePart(xa[i] ?? '0', xb[i] ?? '0');
        if (c !== 0)
            return c;
    }
    if (pa === pb)
        return 0;
    if (pa === undefined)
        return 1;
    if (pb === undefined)
        return -1;
    return pa < pb ? -1 : 1;
}
function splitPre(v) {
    const i = v.indexOf('-');
    return i === -1 ? [v, undefined] : [v.slice(0, i), v.slice(i + 1)];
}
function comparePart(a, b) {
    const na = /^\d+$/.test(a) ? Number(a) : Number.NaN;
    const nb = /^\d+$/.test(b) ? Number(b) : Number.NaN;
    if (!Number.isNaN(na) && !Number.isNaN(nb))
        return na - nb;
    return a < b ? -1 : a > b ? 1 : 0;
}
//# sourceMappingURL=version.js.map