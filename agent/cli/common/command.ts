import type { Writable } from 'node:stream';

export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  /** Resolves to the process exit code. Long-running commands (run) resolve when they stop. */
  run(argv: string[], io: CliIo): Promise<number>;
}
