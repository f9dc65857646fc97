// One error shape for bad input across the agent, so callers and tests can match on `code`.

export class MnnEdgeError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(
    code: string,
    message: string,
    details?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'MnnEdgeError';
    this.code = code;
    this.details = details;
  }

  /** The process exit status a command ends with on this error: 2 for a usage mistake, 1 otherwise. */
  get exitCode(): number {
    return this.code === 'EUSAGE' ? 2 : 1;
  }
}

/**
 * The base of an error family with a closed set of codes (the workloads', the engine's): the subclass gets the
 * typed constructor and its own `name`, so a caller can match on the class or on `code`.
 */
export function codedError<C extends string>(name: string) {
  return class extends MnnEdgeError {
    constructor(code: C, message: string, details?: Record<string, unknown>, options?: { cause?: unknown }) {
      super(code, message, details, options);
      this.name = name;
    }
  };
}

/**
 * Any thrown value as an MnnEdgeError: ours pass through, anything else (a bug, or an error from a library on
 * input nobody anticipated) becomes EINTERNAL with its message only. Stacks stay in logs, never in user output.
 */
export function asMnnEdgeError(err: unknown): MnnEdgeError {
  if (err instanceof MnnEdgeError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  return new MnnEdgeError('EINTERNAL', message, typeof code === 'string' ? { code } : undefined, {
    cause: err,
  });
}

export function describeValue(actual: unknown): string {
  if (actual === undefined) return 'undefined';
  if (actual === null) return 'null';
  if (Array.isArray(actual)) return `array(${actual.length})`;
  if (typeof actual === 'string')
    return JSON.stringify(actual.length > 60 ? actual.slice(0, 57) + '...' : actual);
  if (typeof actual === 'object') return 'object';
  return `${typeof actual} ${String(actual)}`;
}

export function invalidParameter(name: string, expected: string, actual: unknown): MnnEdgeError {
  return new MnnEdgeError(
    'EINVAL',
    `Expected ${expected} for ${name} but received ${describeValue(actual)}`,
    {
      name,
      expected,
    },
  );
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
