// The power-cut bench's record: one JSON line per finished cut, so that 50 cuts (5–9 hours under TCG on a busy
// machine) can be reached over several sittings (`--record FILE --resume`). A record is only meaningful for the
// packages the guest runs and the image under them, so its first line names both by sha256 and a record from
// others is refused. Each line is appended and fsynced once its cut is checked: a sitting stopped by its deadline,
// by hand or by a crash keeps every cut it finished.
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { FullDiskResult } from './powercut-fulldisk.js';
import type { CutResult, SittingTelemetry } from './powercut-report.js';

/** What a record's cuts were made on: each package's sha256 by file name, and the image's cache key. */
export interface RecordKey {
  packages: Record<string, string>;
  image: string;
}

type Line =
  | { kind: 'header'; version: 1; key: RecordKey; created: string }
  | { kind: 'cut'; sitting: number; result: CutResult }
  /** The sitting's telemetry at the host broker so far: written after each cut, the last one counts. */
  | { kind: 'telemetry'; sitting: number; telemetry: SittingTelemetry }
  | { kind: 'fullDisk'; sitting: number; result: FullDiskResult };

export class RecordRefused extends Error {}

/** sha256 of every .deb in `dir` (the packages the guest installed), by file name. */
export function packagesKey(dir: string): Record<string, string> {
  const debs = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.deb')) : [];
  return Object.fromEntries(
    debs.sort().map((f) => [
      f,
      createHash('sha256')
        .update(readFileSync(join(dir, f)))
        .digest('hex'),
    ]),
  );
}

/** The first difference between two keys, in words; undefined when they are the same. */
export function keyDifference(recorded: RecordKey, current: RecordKey): string | undefined {
  if (recorded.image !== current.image) return `image ${recorded.image}, this run's is ${current.image}`;
  const names = [...new Set([...Object.keys(recorded.packages), ...Object.keys(current.packages)])].sort();
  for (const name of names) {
    const a = recorded.packages[name];
    const b = current.packages[name];
    if (a === b) continue;
    const short = (h: string | undefined) => (h === undefined ? 'absent' : `sha256 ${h.slice(0, 12)}…`);
    return `${name}: ${short(a)} in the record, ${short(b)} here`;
  }
  return undefined;
}

export class PowercutRecord {
  readonly path: string;
  readonly cuts: CutResult[] = [];
  /** This run's number; the record's earlier sittings hold 1 … sitting - 1. */
  readonly sitting: number;
  readonly #telemetry = new Map<number, SittingTelemetry>();
  #fullDisk: FullDiskResult | undefined;

  private constructor(path: string, lines: Line[]) {
    this.path = path;
    let last = 0;
    for (const line of lines) {
      if (line.kind === 'header') continue;
      last = Math.max(last, line.sitting);
      if (line.kind === 'cut') this.cuts.push(line.result);
      else if (line.kind === 'telemetry') this.#telemetry.set(line.sitting, line.telemetry);
      else this.#fullDisk = line.result;
    }
    this.sitting = last + 1;
  }

  /**
   * Opens `path` for `key`: a new record (its header written), or, with `resume`, the cuts of an existing one
   * made on the same packages and image. Refused, with one line that says why and what to do: an existing
   * record without `resume`, or one from other packages or another image.
   */
  static open(path: string, key: RecordKey, resume: boolean): PowercutRecord {
    if (!existsSync(path)) {
      mkdirSync(dirname(path), { recursive: true });
      const header: Line = { kind: 'header', version: 1, key, created: new Date().toISOString() };
      appendLine(path, header);
      return new PowercutRecord(path, [header]);
    }
    const lines = parseRecord(path);
    const header = lines[0];
    if (header?.kind !== 'header')
      throw new RecordRefused(`${path} is not a power-cut record (no header line): give another --record`);
    const held = lines.filter((l) => l.kind === 'cut').length;
    const differs = keyDifference(header.key, key);
    if (differs !== undefined)
      throw new RecordRefused(
        `${path} records cuts of other packages (${differs}): give a new --record for these, or run its own packages`,
      );
    if (!resume)
      throw new RecordRefused(
        `${path} already holds ${held} cuts of these packages: --resume continues it, or give a new --record`,
      );
    return new PowercutRecord(path, lines);
  }

  /** Every sitting's telemetry, this one's as last recorded. */
  sittings(): SittingTelemetry[] {
    return [...this.#telemetry.values()];
  }

  fullDisk(): FullDiskResult | undefined {
    return this.#fullDisk;
  }

  /** Settings changes sent in the recorded cuts: the next sitting's tags continue after them. */
  settingsSent(): number {
    return this.cuts.reduce((s, c) => s + c.settingsSent, 0);
  }

  addCut(result: CutResult, telemetry: SittingTelemetry): void {
    appendLine(this.path, { kind: 'cut', sitting: this.sitting, result });
    appendLine(this.path, { kind: 'telemetry', sitting: this.sitting, telemetry });
    this.cuts.push(result);
    this.#telemetry.set(this.sitting, telemetry);
  }

  addFullDisk(result: FullDiskResult): void {
    appendLine(this.path, { kind: 'fullDisk', sitting: this.sitting, result });
    this.#fullDisk = result;
  }
}

function parseRecord(path: string): Line[] {
  const lines: Line[] = [];
  for (const row of readFileSync(path, 'utf8').split('\n')) {
    if (row.trim() === '') continue;
    try {
      lines.push(JSON.parse(row) as Line);
    } catch {
      // A line cut short by a crash while it was written: that cut was not recorded, and is run again.
    }
  }
  return lines;
}

function appendLine(path: string, line: Line): void {
  const fd = openSync(path, 'a');
  try {
    // A torn last line (see parseRecord) is ended first, so that this one stands on its own.
    const text = readFileSync(path, 'utf8');
    const sep = text.length > 0 && !text.endsWith('\n') ? '\n' : '';
    writeSync(fd, `${sep}${JSON.stringify(line)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The record's file in a folder given as --record: named by the image and the packages' digest. */
export function recordFileName(key: RecordKey): string {
  const digest = createHash('sha256').update(JSON.stringify(key.packages)).digest('hex').slice(0, 12);
  return `powercut-${basename(key.image)}-${digest}.jsonl`;
}
