const LEVELS = ['debug', 'info', 'warn', 'error'];
export function isLogLevel(value) {
    return typeof value === 'string' && LEVELS.includes(value);
}
function parseLine(line, maxChars) {
    try {
        const parsed = JSON.parse(line);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
            const r = parsed;
            if (typeof r['msg'] === 'string' && isLogLevel(r['level'])) {
                const record = {
                    ...r,
                    ts: typeof r['ts'] === 'string' ? r['ts'] : '',
                    ns: typeof r['ns'] === 'string' ? r['ns'] : '',
                };
                if (line.length <= maxChars)
                    return record;
                return {
                    ts: record.ts,
                    level: record.level,
                    ns: record.ns,
                    msg: record.msg.slice(0, maxChars),
                    cut: true,
                };
            }
        }
    }
    catch {
        // Not one of ours (a native library printing to stdout): kept as an info line below.
    }
    return { ts: new Date().toISOString(), level: 'info', ns: 'stdout', msg: line.slice(0, maxChars) };
}
export class LogTail {
    #maxLines;
    #maxBytes;
    #maxLineChars;
    #records = [];
    #bytes = 0;
    #seq = 0;
    constructor(options = {}) {
        this.#maxLines = options.maxLines ?? 2000;
        this.#maxBytes = options.maxBytes ?? 1024 * 1024;
        this.#maxLineChars = options.maxLineChars ?? 4096;
    }
    /** Feed one log line (as the logger writes it); pass this as createLogger's `write` next to stdout. */
    write = (line) => {
        const record = parseLine(line, this.#maxLineChars);
        const bytes = Math.min(line.length, this.#maxLineChars) * 2;
        this.#records.push({ record, bytes, seq: ++this.#seq });
        this.#bytes += bytes;
        while (this.#records.length > this.#maxLines ||
            (this.#bytes > this.#maxBytes && this.#records.length > 1)) {
            this.#bytes -= this.#records.shift().bytes;
        }
    };
    /** The newest `limit` records at or above `minLevel` (oldest first), and the sequence number to poll after. */
    tail(query) {
        const min = LEVELS.indexOf(query.minLevel ?? 'debug');
        const picked = [];
        for (let i = this.#records.length - 1; i >= 0 && picked.length < query.limit; i--) {
            const entry = this.#records[i];
            if (query.after !== undefined && entry.seq <= query.after)
                break;
            if (LEVELS.indexOf(entry.record.level) < min)
                continue;
            if (query.ns !== undefined && !entry.record.ns.startsWith(query.ns))
                continue;
            picked.push(entry.record);
        }
        return { records: picked.reverse(), last: this.#seq };
    }
}
//# sourceMappingURL=log-tail.js.map