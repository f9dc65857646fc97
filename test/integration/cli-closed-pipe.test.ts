import { spawn } from 'node:child_process';
import { join } from 'node:path';
import test from 'ava';
import { modelFixturesDir, repoRoot, socFixturesDir } from '../helpers/paths.js';

// `mnn-edge … | head -1`: the reader is gone before the command writes. The real CLI in a child process, with
// its stdout closed at once, must end with its normal status and nothing on stderr (no EPIPE stack trace).

function withClosedStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import=tsx', 'agent/cli/mnn-edge.ts', ...args], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MNN_EDGE_DATA_DIR: join(repoRoot, 'does-not-exist-data') },
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

const commands: string[][] = [
  ['detect', '--root', join(socFixturesDir, 'rpi5-bcm2712')],
  ['detect', '--root', join(socFixturesDir, 'rpi5-bcm2712'), '--json'],
  ['models', 'inspect', join(modelFixturesDir, 'tiny-llm', 'llm.mnn')],
  ['config', '--schema'],
  ['--help'],
  ['--version'],
  ['models', '--help'],
];

for (const args of commands) {
  test(`closed pipe: mnn-edge ${args.map((a) => a.replace(repoRoot, '.')).join(' ')} exits quietly`, async (t) => {
    const r = await withClosedStdout(args);
    t.is(r.stderr, '');
    t.is(r.code, 0);
  });
}
