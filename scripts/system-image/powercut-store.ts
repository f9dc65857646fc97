// The model store after a cut: every installed package holds every file its manifest lists, with that length and
// sha256 (the old version or the new one, never a half), no package directory without its row (recovery removed
// what a cut left), and no temporary files left behind once the OTA job and the pull have ended (the store's
// .staging and .trash, OTA's staging directory, the hub's download directory). The guest only reports what is on
// its disk; the verdict is made here, on the host, where it is unit-tested.
import { MANIFEST_FILE } from '../../models/manifest/types.js';
import type { Guest } from './guest.js';
import { sh } from './guest.js';
import { DATA_DIR } from './powercut-checks.js';

export const MODELS_DIR = `${DATA_DIR}/models`;
/** The model ids the run installs: by OTA, and by hub pull. */
export const OTA_MODEL = 'pc-ota';
export const HUB_MODEL = 'pc-hub';
/** Where temporary files of model writes live (relative to the data directory). */
export const DEBRIS_DIRS = ['models/.staging', 'models/.trash', 'ota/staging', 'hub-downloads'] as const;

export interface StoreFacts {
  /** model_packages rows: id, version and the manifest as stored. */
  rows: Array<{ id: string; version: string; manifest: string }>;
  /** Every regular file under the models directory, by path relative to it. */
  files: Map<string, { size: number; sha256: string }>;
  /** Entries in each of DEBRIS_DIRS (absent directory: none). */
  debris: Record<string, string[]>;
}

export interface StoreVerdict {
  packages: number;
  /** Packages with a file missing, short, or with another sha256 than the manifest's: halves. */
  torn: string[];
  /** Package directories without a row (a half install recovery should have removed). */
  orphans: string[];
  /** Temporary files still there once every model write has ended. */
  debris: string[];
  /** Partial downloads of other commits than this cut's pull: kept for a resume, removed after 7 days unused
   *  (models/hub/stale-partials.ts), so not debris. */
  keptPartials?: string[];
}

interface ManifestFiles {
  variants?: Array<{ files?: Array<{ path: string; length: number; sha256: string }> }>;
}

/** `pullCommit`: the commit this cut's pull fetched; its download directory (…-<commit[0,16]>) must be gone once
 *  the pull has ended, while other commits' partials may stay for a later resume. */
export function judgeStore(facts: StoreFacts, pullCommit?: string): StoreVerdict {
  const torn: string[] = [];
  const listed = new Set<string>();
  for (const row of facts.rows) {
    const ref = `${row.id}@${row.version}`;
    const base = `${row.id}/${row.version}`;
    listed.add(base);
    let manifest: ManifestFiles;
    try {
      manifest = JSON.parse(row.manifest) as ManifestFiles;
    } catch {
      torn.push(`${ref}: its stored manifest is not JSON`);
      continue;
    }
    const problems: string[] = [];
    if (!facts.files.has(`${base}/${MANIFEST_FILE}`)) problems.push(`${MANIFEST_FILE} missing`);
    const seen = new Set<string>();
    for (const f of (manifest.variants ?? []).flatMap((v) => v.files ?? [])) {
      if (seen.has(f.path)) continue;
      seen.add(f.path);
      const onDisk = facts.files.get(`${base}/${f.path}`);
      if (onDisk === undefined) problems.push(`${f.path} missing`);
      else if (onDisk.size !== f.length) problems.push(`${f.path} has ${onDisk.size} bytes, not ${f.length}`);
      else if (onDisk.sha256 !== f.sha256) problems.push(`${f.path} has another sha256`);
    }
    if (seen.size === 0) problems.push('its manifest lists no file');
    if (problems.length > 0) torn.push(`${ref}: ${problems.join(', ')}`);
  }
  const orphans = new Set<string>();
  for (const path of facts.files.keys()) {
    const [id, version] = path.split('/');
    if (id === undefined || version === undefined || id.startsWith('.')) continue;
    if (!listed.has(`${id}/${version}`)) orphans.add(`${id}/${version}`);
  }
  const all = Object.entries(facts.debris).flatMap(([dir, names]) => names.map((n) => `${dir}/${n}`));
  const kept = all.filter(
    (d) =>
      d.startsWith('hub-downloads/') &&
      pullCommit !== undefined &&
      !d.endsWith(`-${pullCommit.slice(0, 16)}`),
  );
  const debris = all.filter((d) => !kept.includes(d));
  return {
    packages: facts.rows.length,
    torn,
    orphans: [...orphans],
    debris,
    ...(kept.length > 0 ? { keptPartials: kept } : {}),
  };
}

/** Reads the facts from the guest: the rows from the agent's database (as its owner), the files with their
 *  hashes, and the temporary directories' entries. */
export async function storeFacts(guest: Guest): Promise<StoreFacts> {
  const out = await sh(
    guest,
    `set -e
     owner=$(stat -c %U ${DATA_DIR})
     db=''
     for f in $(find ${DATA_DIR} -maxdepth 1 -type f -name '*.db'); do
       if [ -n "$(runuser -u "$owner" -- sqlite3 "$f" "SELECT name FROM sqlite_master WHERE name='model_packages'")" ]; then db=$f; fi
     done
     echo '@rows'
     if [ -n "$db" ]; then runuser -u "$owner" -- sqlite3 -json "$db" 'SELECT id, version, manifest FROM model_packages'; fi
     echo '@files'
     if [ -d ${MODELS_DIR} ]; then cd ${MODELS_DIR} && find . -type f -exec sh -c 'for f; do printf "%s %s\\n" "$(stat -c %s "$f")" "$(sha256sum "$f")"; done' sh {} +; fi
     for d in ${DEBRIS_DIRS.join(' ')}; do echo "@debris $d"; ls -A ${DATA_DIR}/$d 2>/dev/null || true; done`,
    5 * 60_000,
  );
  return parseStoreFacts(out);
}

export function parseStoreFacts(out: string): StoreFacts {
  const facts: StoreFacts = { rows: [], files: new Map(), debris: {} };
  let section = '';
  let rowsJson = '';
  for (const line of out.split('\n')) {
    if (line.startsWith('@')) {
      section = line;
      if (line.startsWith('@debris ')) facts.debris[line.slice('@debris '.length)] = [];
      continue;
    }
    if (line.trim() === '') continue;
    if (section === '@rows') rowsJson += line;
    else if (section === '@files') {
      // "<size> <sha256>  ./<path>"
      const m = /^(\d+) ([0-9a-f]{64}) {2}\.\/(.+)$/.exec(line);
      if (m) facts.files.set(m[3]!, { size: Number(m[1]), sha256: m[2]! });
    } else if (section.startsWith('@debris ')) facts.debris[section.slice('@debris '.length)]!.push(line);
  }
  if (rowsJson !== '') facts.rows = JSON.parse(rowsJson) as StoreFacts['rows'];
  return facts;
}

export interface ModelCheck {
  ota: {
    jobId: string;
    version: string;
    /** The last state the device reported before the cut ('none': the job had not reached it yet). */
    atCut: string;
    final: string;
    message?: string;
  };
  pull: {
    /** The pull's state and phase as last seen before the cut (or why it was not started). */
    atCut: string;
    /** The same pull after the boot: installed (resumed: fetched < total), unchanged (it had landed). */
    after: string;
    fetchedBytes?: number;
    totalBytes?: number;
  };
  store: StoreVerdict;
  /** Acknowledged model writes missing after the cut (an OTA success or an installed pull). */
  lost: string[];
  /** Writes that did not end cleanly after the boot (a job or a pull that failed). */
  unclean: string[];
}

/** What the host saw of the model writes before the cut, what happened after the boot, and the store's state
 *  once both have ended: the verdict on one cut's model writes. */
export function judgeModels(
  before: { ota: { jobId: string; version: string; states: string[] }; pull: PullBefore },
  after: {
    otaFinal: { state: string; message?: string };
    pull: {
      state: string;
      model?: string;
      fetchedBytes?: number;
      totalBytes: number;
      error?: { message: string };
    };
  },
  store: StoreVerdict,
  rows: StoreFacts['rows'],
): ModelCheck {
  const lost: string[] = [];
  const unclean: string[] = [];
  const has = (id: string, version: string) => rows.some((r) => r.id === id && r.version === version);
  const otaAtCut = before.ota.states.at(-1) ?? 'none';
  if (otaAtCut === 'succeeded' && !has(OTA_MODEL, before.ota.version))
    lost.push(
      `OTA ${OTA_MODEL}@${before.ota.version} reported succeeded before the cut and is not installed`,
    );
  if (after.otaFinal.state !== 'succeeded')
    unclean.push(
      `OTA job ${before.ota.jobId} ended ${after.otaFinal.state}: ${after.otaFinal.message ?? ''}`,
    );
  else if (!has(OTA_MODEL, before.ota.version))
    unclean.push(
      `OTA job ${before.ota.jobId} succeeded but ${OTA_MODEL}@${before.ota.version} is not installed`,
    );
  const p = before.pull.last;
  const pullAtCut = before.pull.refused
    ? `refused (${before.pull.refused})`
    : p
      ? `${p.state}/${p.phase} ${p.doneBytes}/${p.totalBytes} B`
      : 'started, no view yet';
  if (p?.state === 'installed' && after.pull.state !== 'unchanged')
    lost.push(
      `the pull installed ${p.model ?? '?'} before the cut, and after the boot it ${after.pull.state}`,
    );
  if (after.pull.state !== 'installed' && after.pull.state !== 'unchanged')
    unclean.push(`the pull after the boot ${after.pull.state}: ${after.pull.error?.message ?? ''}`);
  const model = after.pull.model?.split('@');
  if (model && model.length === 2 && !has(model[0]!, model[1]!))
    unclean.push(`the pull says ${after.pull.model} but the store has no such row`);
  return {
    ota: {
      jobId: before.ota.jobId,
      version: before.ota.version,
      atCut: otaAtCut,
      final: after.otaFinal.state,
      ...(after.otaFinal.message ? { message: after.otaFinal.message } : {}),
    },
    pull: {
      atCut: pullAtCut,
      after: after.pull.state,
      ...(after.pull.fetchedBytes !== undefined ? { fetchedBytes: after.pull.fetchedBytes } : {}),
      totalBytes: after.pull.totalBytes,
    },
    store,
    lost,
    unclean,
  };
}

interface PullBefore {
  last?: { state: string; phase: string; doneBytes: number; totalBytes: number; model?: string };
  refused?: string;
}
