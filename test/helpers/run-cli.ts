// The mnn-edge CLI run in this process, its output captured: what the fleet tests call as an operator would.
import { PassThrough } from 'node:stream';
import { main } from '../../agent/cli/main.js';

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

export interface CliOptions {
  /** Environment variables on top of the data dir's (HOME, MNN_EDGE_CACHE, ...). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Runs `mnn-edge ...argv` with a data dir of its own, away from the machine's agent; with options first
 * (`runCli({ env }, 'models', 'ls')`), in an environment of the test's own as well.
 */
export async function runCli(...args: [CliOptions, ...string[]] | string[]): Promise<CliResult> {
  const [options, argv] =
    typeof args[0] === 'object' ? [args[0], args.slice(1) as string[]] : [{}, args as string[]];
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const env = { MNN_EDGE_DATA_DIR: '/tmp/mnn-edge-cli-test', ...options.env };
  const code = await main(argv, { stdout, stderr, env });
  return { code, out, err };
}
