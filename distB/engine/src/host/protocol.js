export function isHostRequest(v) {
    if (v === null || typeof v !== 'object')
        return false;
    const m = v;
    return typeof m.type === 'string' && typeof m.id === 'number';
}
export function isHostResponse(v) {
    if (v === null || typeof v !== 'object')
        return false;
    return typeof v.type === 'string';
}
//# sourceMappingURL=protocol.js.map