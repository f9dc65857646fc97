import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DebArch } from '../../scripts/deb/inputs.js';

export interface BuiltDeb {
  name: string;
  path: string;
}

const script = pathToFileURL(join(import.meta.dirname, '..', '..', 'scripts', 'package-deb.ts')).href;

/**
 * `packageDeb` in a child process. The build is minutes of synchronous work (npm, patchelf, xz); run in the test
 * worker it would block the worker's event loop, so AVA never hears of the hook's longer `t.timeout()` and stops
 * the file at its 3-minute inactivity timeout on a busy machine.
 */
export function packageDebInChild(options: {
  arch: DebArch;
  outDir: string;
  version: string;
  only: readonly string[];
}): Promise<BuiltDeb[]> {
  const code = `const { packageDeb } = await import(${JSON.stringify(script)});
const r = packageDeb({ ...JSON.parse(process.env.MNN_EDGE_DEB_OPTIONS), log: () => {} });
process.stdout.write(JSON.stringify(r.debs.map(({ name, path }) => ({ name, path }))));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      env: { ...process.env, MNN_EDGE_DEB_OPTIONS: JSON.stringify(options) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      err += b.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`packageDeb (${options.arch}) exited ${code}: ${err.slice(-2000)}`));
      else resolve(JSON.parse(out) as BuiltDeb[]);
    });
  });
}
