// Minimal, typed argv parsing: `--flag`, `--key value`, `--key=value`, positionals. Unknown flags are errors.

import { MnnEdgeError } from '../../../lib/errors.js';

export interface ParsedArgs {
  positionals: string[];
  flags: Record<string, string | boolean>;
}

export interface FlagSpec {
  /** Flags that take a value. */
  values?: readonly string[];
  /** Flags that are booleans. */
  booleans?: readonly string[];
}

export class UsageError extends MnnEdgeError {
  constructor(message: string) {
    super('EUSAGE', message);
    this.name = 'UsageError';
  }
}

export function parseArgs(argv: readonly string[], spec: FlagSpec): ParsedArgs {
  const values = new Set(spec.values ?? []);
  const booleans = new Set(spec.booleans ?? []);
  const out: ParsedArgs = { positionals: [], flags: {} };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      out.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--') || arg === '-') {
      out.positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (booleans.has(name)) {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      out.flags[name] = true;
    } else if (values.has(name)) {
      const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      out.flags[name] = value;
    } else {
      throw new UsageError(`unknown option --${name}`);
    }
  }
  return out;
}

export function stringFlag(args: ParsedArgs, name: string): string | undefined {
  const v = args.flags[name];
  return typeof v === 'string' ? v : undefined;
}
