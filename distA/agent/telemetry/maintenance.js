export const defaultVacuumPolicy = { minFreeFraction: 0.25, minFreePages: 256 };
export function vacuumIfWorthIt(db, policy = defaultVacuumPolicy) {
    const freePages = db.pragma('freelist_count', { simple: true });
    const pageCount = db.pragma('page_count', { simple: true });
    const worth = freePages >= policy.minFreePages && freePages >= pageCount * policy.minFreeFraction;
    if (worth)
        db.exec('VACUUM');
    return { vacuumed: worth, freePages, pageCount };
}
//# sourceMappingURL=maintenance.js.map