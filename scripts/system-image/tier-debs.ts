// The arm64 packages a guest installs, built from this checkout. A fresh clone has neither the cross-built addons
// nor dist/: both are built (scripts/arm64-natives.ts; package:deb --build compiles into the stage, as a
// checkout's dist/ may be stale). mnn-edge-node is the same file for as long as the Node release and its
// packaging code stay the same, and xz-compressing its 95 MB took over 4 minutes on a loaded 2-core machine, so it
// is built once per key into the cache; the agent and the engine are built every time.
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { join } from 'node:path';
import { buildArm64Natives, mnnEdgeCache } from '../arm64-natives.js';
import { NODE_VERSION, nodeRuntime } from '../deb/inputs.js';
import { packageDeb } from '../package-deb.js';

const repo = join(import.meta.dirname, '..', '..');

/** What the Node package's bytes depend on besides the Node release: the code that lays it out and packs it. */
function nodePackageKey(): string {
  const hash = createHash('sha256').update(NODE_VERSION);
  // Paths relative to the checkout, so every clone of the same code finds the same file.
  const files = [
    'scripts/package-deb.ts',
    ...readdirSync(join(repo, 'scripts', 'deb')).map((f) => `scripts/deb/${f}`),
    'packaging/debian/mnn-edge-node.lintian-overrides',
  ];
  for (const f of files.filter((f) => existsSync(join(repo, f))).sort()) {
    hash.update(f).update(readFileSync(join(repo, f)));
  }
  return hash.digest('hex').slice(0, 16);
}

export function buildTierDebs(outDir: string, log: (line: string) => void): void {
  const nodeDir = nodeRuntime('arm64');
  buildArm64Natives({
    repo,
    prefix: process.env['MNN_ROOT_AARCH64'] || '/opt/mnn-aarch64',
    nodeDir,
    nodeVersion: NODE_VERSION,
    log,
  });
  const cacheDir = join(mnnEdgeCache(), `deb-mnn-edge-node-arm64-${nodePackageKey()}`);
  const cachedName = () => readdirSync(cacheDir).find((f) => f.endsWith('.deb'));
  if (!existsSync(cacheDir) || cachedName() === undefined) {
    log(`building mnn-edge-node once into ${cacheDir}`);
    mkdirSync(mnnEdgeCache(), { recursive: true });
    const tmp = mkdtempSync(`${cacheDir}.partial-`);
    try {
      packageDeb({ arch: 'arm64', outDir: tmp, build: true, only: ['mnn-edge-node'], log: () => {} });
      rmSync(cacheDir, { recursive: true, force: true });
      renameSync(tmp, cacheDir);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  log(
    'building the arm64 packages (npm run package:deb -- --arch arm64 --build; mnn-edge-node from the cache)',
  );
  packageDeb({ arch: 'arm64', outDir, build: true, only: ['mnn-edge', 'mnn-edge-engine'], log: () => {} });
  const node = cachedName()!;
  copyFileSync(join(cacheDir, node), join(outDir, node));
}
