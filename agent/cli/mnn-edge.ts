#!/usr/bin/env node
// First: the bench's timer census, when asked for, must start before the modules below make their timers.
import './timer-census-env.js';
import { onClosedPipe } from './closed-pipe.js';
import { main } from './main.js';

const argv = process.argv.slice(2);
// A long-running daemon outlives whoever read its output; every other command has nothing left to do.
onClosedPipe([process.stdout, process.stderr], () => {
  if (argv[0] !== 'run') process.exit(process.exitCode ?? 0);
});

const code = await main(argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
// `run` resolves only when the daemon stops; everything else exits with its status.
process.exitCode = code;
