import {
  appendFileSync,
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { join } from 'node:path';
import { fsyncDir, renameDurable, writeFileDurable } from '../../lib/durable-fs.js';
import { errorMessage } from '../../lib/errors.js';
import { formatSchemaErrors, validate } from '../../lib/schema.js';
import { fileOnlyKeys } from './overlay-keys.js';
import { agentConfigSchema } from './schema.js';
import { isPlainObject, type JsonObject, type LeafChange } from './sources.js';

// The run-time overlay on disk: <dataDir>/config-overlay.json, replaced atomically (write, fsync, rename,
// fsync the directory) with a revision that goes up by one on every change, and the change log beside it,
// <dataDir>/config-history.jsonl (one JSON line per change, appended and fsynced; the overlay after each change
// is in its line, which is where "the last good revision" comes from when the overlay file is damaged).
//
// A damaged overlay, or one written by a newer agent, is never overwritten silently: the agent runs on the
// last good revision from the log, says why, and the next change first moves the file aside (the log and the
// answer name where).

export const OVERLAY_FILE = 'config-overlay.json';
export const HISTORY_FILE = 'config-history.jsonl';
export const OVERLAY_FORMAT = 1;
/** The log is cut back to the newest KEEP lines once it holds twice that many. */
const HISTORY_KEEP = 1000;

export interface HistoryEntry {
  revision: number;
  /** ISO time of the change. */
  at: string;
  /** Who made it: `dashboard (session from 192.168.1.20)`, `fleet operator ops-1`, `home assistant`, `cli`. */
  who: string;
  changes: LeafChange[];
  /** The whole overlay after the change. */
  overlay: JsonObject;
  note?: string;
}

export interface OverlayState {
  revision: number;
  overlay: JsonObject;
  /** Set when the file could not be used; the agent runs on `revision` from the log instead. */
  problem?: string;
}

function checkOverlay(raw: unknown): string | undefined {
  if (!isPlainObject(raw)) return 'expected a JSON object';
  if (raw['format'] !== OVERLAY_FORMAT) {
    return typeof raw['format'] === 'number' && raw['format'] > OVERLAY_FORMAT
      ? `written by a newer agent (format ${raw['format']}; this agent reads format ${OVERLAY_FORMAT})`
      : `unknown format ${JSON.stringify(raw['format'])} (expected ${OVERLAY_FORMAT})`;
  }
  if (!Number.isInteger(raw['revision']) || (raw['revision'] as number) < 0)
    return 'revision: expected a non-negative integer';
  const errors = validate(agentConfigSchema, raw['overlay']);
  if (errors.length > 0) return formatSchemaErrors(errors);
  const bad = fileOnlyKeys(raw['overlay']);
  if (bad.length > 0) return `${bad.join(', ')}: may be set only in the configuration file`;
  return undefined;
}

export class OverlayStore {
  readonly path: string;
  readonly historyPath: string;
  #state: OverlayState | undefined;

  constructor(readonly dataDir: string) {
    this.path = join(dataDir, OVERLAY_FILE);
    this.historyPath = join(dataDir, HISTORY_FILE);
  }

  /** The overlay to run on: the file, or the last good revision from the log when the file cannot be used. */
  load(): OverlayState {
    if (this.#state) return this.#state;
    try {
      this.#state = this.#read();
    } catch (err) {
      // Unreadable (a user without access to the service's data directory): say so, run on the file.
      return {
        revision: 0,
        overlay: {},
        problem: `The run-time settings in ${this.path} cannot be read: ${errorMessage(err)}`,
      };
    }
    return this.#state;
  }

  #read(): OverlayState {
    if (!existsSync(this.path)) return { revision: this.#lastLogged()?.revision ?? 0, overlay: {} };
    let problem: string | undefined;
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(this.path, 'utf8'));
      problem = checkOverlay(raw);
    } catch (err) {
      problem = `not valid JSON (${errorMessage(err)})`;
    }
    if (problem === undefined) {
      const r = raw as { revision: number; overlay: JsonObject };
      return { revision: r.revision, overlay: r.overlay };
    }
    const good = this.#lastLogged();
    const fallback = good
      ? `running on revision ${good.revision} from the change log`
      : 'running on the defaults and the file';
    return {
      revision: good?.revision ?? 0,
      overlay: good?.overlay ?? {},
      problem: `The run-time settings in ${this.path} were not used: ${problem}; ${fallback}. The file is kept as it is until the next change moves it aside.`,
    };
  }

  #lastLogged(): HistoryEntry | undefined {
    const entries = this.history();
    return entries.find(
      (e) => checkOverlay({ format: OVERLAY_FORMAT, revision: e.revision, overlay: e.overlay }) === undefined,
    );
  }

  /** Newest first; lines that do not parse (a torn last line after a power cut) are skipped. */
  history(limit = Number.POSITIVE_INFINITY): HistoryEntry[] {
    if (!existsSync(this.historyPath)) return [];
    const out: HistoryEntry[] = [];
    const lines = readFileSync(this.historyPath, 'utf8').split('\n');
    for (let i = lines.length - 1; i >= 0 && out.length < limit; i--) {
      const line = lines[i]?.trim();
      if (!line) continue;
      try {
        const e = JSON.parse(line) as HistoryEntry;
        if (Number.isInteger(e.revision) && isPlainObject(e.overlay) && Array.isArray(e.changes)) out.push(e);
      } catch {
        // skipped: see above
      }
    }
    return out;
  }

  /** Writes the next revision and logs it; returns the entry. The caller has validated `overlay`. */
  commit(overlay: JsonObject, who: string, changes: LeafChange[], at: Date): HistoryEntry {
    const state = this.load();
    mkdirSync(this.dataDir, { recursive: true, mode: 0o700 });
    let note: string | undefined;
    if (state.problem !== undefined && existsSync(this.path)) {
      const aside = `${this.path}.rejected-${at.toISOString().replace(/[:.]/g, '-')}`;
      renameDurable(this.path, aside);
      note = `the unusable overlay file was moved to ${aside}`;
    }
    const revision = state.revision + 1;
    const doc = { format: OVERLAY_FORMAT, revision, updatedAt: at.toISOString(), overlay };
    const entry: HistoryEntry = {
      revision,
      at: at.toISOString(),
      who,
      changes,
      overlay,
      ...(note ? { note } : {}),
    };
    // All or nothing, a full disk included (the change is refused, so it must not be half there): the previous
    // overlay stays linked beside the new one (a name, no data blocks) until the log line is written, and is
    // renamed back when that fails. A cut in between leaves the new overlay without its log line, which the
    // answer never acknowledged; the stale link is replaced at the next change.
    const previous = `${this.path}.prev`;
    const hadPrevious = existsSync(this.path);
    rmSync(previous, { force: true });
    if (hadPrevious) linkSync(this.path, previous);
    try {
      writeFileDurable(this.path, `${JSON.stringify(doc, null, 2)}\n`, 0o600);
      try {
        this.#append(entry);
      } catch (err) {
        if (hadPrevious) renameDurable(previous, this.path);
        else {
          rmSync(this.path, { force: true });
          fsyncDir(this.dataDir);
        }
        throw err;
      }
    } finally {
      rmSync(previous, { force: true });
    }
    this.#state = { revision, overlay };
    return entry;
  }

  #append(entry: HistoryEntry): void {
    const created = !existsSync(this.historyPath);
    const fd = openSync(this.historyPath, 'a', 0o600);
    try {
      const size = fstatSync(fd).size;
      try {
        appendFileSync(fd, `${JSON.stringify(entry)}\n`);
        fsyncSync(fd);
      } catch (err) {
        // A short write (the disk filled half way through the line) would glue the next line to this torn one
        // and hide it: cut the file back to where it was. Best effort: a device may refuse the truncate.
        try {
          ftruncateSync(fd, size);
          fsyncSync(fd);
        } catch {
          // the torn line stays (history() skips lines that do not parse)
        }
        throw err;
      }
    } finally {
      closeSync(fd);
    }
    // A new file's name is durable only once its directory is.
    if (created) fsyncDir(this.dataDir);
    try {
      const lines = readFileSync(this.historyPath, 'utf8').split('\n').filter(Boolean);
      if (lines.length > 2 * HISTORY_KEEP)
        writeFileDurable(this.historyPath, `${lines.slice(-HISTORY_KEEP).join('\n')}\n`, 0o600);
    } catch {
      // Trimming is housekeeping: the change is written; a full disk just leaves the log longer until later.
    }
  }
}
