// JSON lines to stdout so journald and log shippers keep structure; debug namespaces gate verbose output.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(namespace: string): Logger;
}

export interface LoggerOptions {
  namespace?: string;
  level?: LogLevel;
  /** Comma-separated namespaces (prefix match, `*` = all) for which debug lines are printed, like DEBUG=. */
  debug?: string;
  write?: (line: string) => void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

function debugEnabled(spec: string | undefined, ns: string): boolean {
  if (!spec) return false;
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .some((p) => p === '*' || ns === p || (p.endsWith('*') && ns.startsWith(p.slice(0, -1))));
}

function serialise(value: unknown): unknown {
  if (value instanceof Error)
    return { name: value.name, message: value.message, code: (value as { code?: unknown }).code };
  if (typeof value === 'bigint') return value.toString();
  return value;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const ns = options.namespace ?? 'mnn-edge';
  const min = ORDER[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (ORDER[level] < min && !(level === 'debug' && debugEnabled(options.debug, ns))) return;
    const record: Record<string, unknown> = { ts: new Date().toISOString(), level, ns, msg };
    if (fields) for (const [k, v] of Object.entries(fields)) record[k] = serialise(v);
    write(JSON.stringify(record));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (sub) => createLogger({ ...options, namespace: `${ns}:${sub}` }),
  };
}

/** A logger that keeps records in memory: for tests and for the bounded `logs` tail. */
export function createMemoryLogger(capacity = 1000): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'debug',
    write: (line) => {
      lines.push(line);
      if (lines.length > capacity) lines.shift();
    },
  });
  return Object.assign(logger, { lines });
}
