// The mnn-edge CLI run in this process, its output captured: what the fleet tests call as an operator would.
import { PassThrough } from 'node:stream';
import { main } from '../../agent/cli/main.js';

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

/** Runs `mnn-edge ...argv` with a data dir of its own, away from the machine's agent. */
export async function runCli(...argv: string[]): Promise<CliResult> {
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
  const code = await main(argv, { stdout, stderr, env: { MNN_EDGE_DATA_DIR: '/tmp/mnn-edge-cli-test' } });
  return { code, out, err };
}
