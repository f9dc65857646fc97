#!/usr/bin/env node
import { main } from './main.js';

const code = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
// `run` resolves only when the daemon stops; everything else exits with its status.
process.exitCode = code;
