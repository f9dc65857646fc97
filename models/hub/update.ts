import type { HubProvenance } from '../manifest/types.js';
import { checkListing } from './export-check.js';
import type { HubFile, HubSnapshot } from './types.js';

// `models update <id>`: what a newer commit of the repository would change in the installed package. A file
// counts as unchanged when the hub states the same sha256 (or, for files it only lists by git blob id, the
// same id) as the pulled one had.

export interface SnapshotDiff {
  newer: boolean;
  from: string;
  to: string;
  added: HubFile[];
  changed: HubFile[];
  removed: string[];
  downloadBytes: number;
}

export function diffSnapshot(prov: HubProvenance, snapshot: HubSnapshot): SnapshotDiff {
  const { files } = checkListing(snapshot);
  const before = new Map(prov.files.map((f) => [f.path, f]));
  const added: HubFile[] = [];
  const changed: HubFile[] = [];
  for (const f of files) {
    const old = before.get(f.path);
    if (!old) added.push(f);
    else if (
      f.sha256 !== undefined
        ? f.sha256 !== old.sha256
        : f.gitOid !== undefined
          ? f.gitOid !== old.gitOid
          : true
    )
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
