import type { LogLevel } from './log.js';

// The agent's recent JSON log lines in memory, for the dashboard's Logs page and the fleet's `logs` command:
// the composition root tees the logger's output into this one ring, so neither needs journald access. Bounded in both lines and bytes, so a
// burst of huge log lines cannot grow the agent's heap.

export interface LogRecord {
  ts: string;
  level: LogLevel;
  ns: string;
  msg: string;
  [field: string]: unknown;
}

export interface LogTailOptions {
  maxLines?: number;
  maxBytes?: number;
  /** Longer lines are cut to this many characters (the record keeps ts, level, ns and a cut msg). */
  maxLineChars?: number;
}

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LEVELS as readonly string[]).includes(value);
}

function parseLine(line: string, maxChars: number): LogRecord {
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      const r = parsed as Record<string, unknown>;
      if (typeof r['msg'] === 'string' && isLogLevel(r['level'])) {
        const record = {
          ...r,
          ts: typeof r['ts'] === 'string' ? r['ts'] : '',
          ns: typeof r['ns'] === 'string' ? r['ns'] : '',
        } as LogRecord;
        if (line.length <= maxChars) return record;
        return {
          ts: record.ts,
          level: record.level,
          ns: record.ns,
          msg: record.msg.slice(0, maxChars),
          cut: true,
        };
      }
    }
  } catch {
    // Not one of ours (a native library printing to stdout): kept as an info line below.
  }
  return { ts: new Date().toISOString(), level: 'info', ns: 'stdout', msg: line.slice(0, maxChars) };
}

export class LogTail {
  readonly #maxLines: number;
  readonly #maxBytes: number;
  readonly #maxLineChars: number;
  readonly #records: Array<{ record: LogRecord; bytes: number; seq: number }> = [];
  #bytes = 0;
  #seq = 0;

  constructor(options: LogTailOptions = {}) {
    this.#maxLines = options.maxLines ?? 2000;
    this.#maxBytes = options.maxBytes ?? 1024 * 1024;
    this.#maxLineChars = options.maxLineChars ?? 4096;
  }

  /** Feed one log line (as the logger writes it); pass this as createLogger's `write` next to stdout. */
  readonly write = (line: string): void => {
    const record = parseLine(line, this.#maxLineChars);
    const bytes = Math.min(line.length, this.#maxLineChars) * 2;
    this.#records.push({ record, bytes, seq: ++this.#seq });
    this.#bytes += bytes;
    while (
      this.#records.length > this.#maxLines ||
      (this.#bytes > this.#maxBytes && this.#records.length > 1)
    ) {
      this.#bytes -= this.#records.shift()!.bytes;
    }
  };

  /** The newest `limit` records at or above `minLevel` (oldest first), and the sequence number to poll after. */
  tail(query: { limit: number; minLevel?: LogLevel; after?: number; ns?: string }): {
    records: LogRecord[];
    last: number;
  } {
    const min = LEVELS.indexOf(query.minLevel ?? 'debug');
    const picked: LogRecord[] = [];
    for (let i = this.#records.length - 1; i >= 0 && picked.length < query.limit; i--) {
      const entry = this.#records[i]!;
      if (query.after !== undefined && entry.seq <= query.after) break;
      if (LEVELS.indexOf(entry.record.level) < min) continue;
      if (query.ns !== undefined && !entry.record.ns.startsWith(query.ns)) continue;
      picked.push(entry.record);
    }
    return { records: picked.reverse(), last: this.#seq };
  }
}
