import { checkListing } from './export-check.js';
export function diffSnapshot(prov, snapshot) {
    const { files } = checkListing(snapshot);
    const before = new Map(prov.files.map((f) => [f.path, f]));
    const added = [];
    const changed = [];
    for (const f of files) {
        const old = before.get(f.path);
        if (!old)
            added.push(f);
        else if (f.sha256 !== undefined
            ? f.sha256 !== old.sha256
            : f.gitOid !== undefined
                ? f.gitOid !== old.gitOid
                : true)
            changed.push(f);
    }
    const now = new Set(files.map((f) => f.path));
    const removed = prov.files.map((f) => f.path).filter((p) => !now.has(p));
    return {
        newer: snapshot.commit !== prov.commit,
        from: prov.commit,
        to: snapshot.commit,
        added,
        changed,
        removed,
        downloadBytes: [...added, ...changed].reduce((a, f) => a + f.size, 0),
    };
}
//# sourceMappingURL=update.js.map