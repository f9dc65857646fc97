// What the Yocto recipe fetches and what it declares about licenses, both derived from package-lock.json:
// - the build shrinkwrap: the production dependencies plus only the build tools the recipe runs (the TypeScript
//   compiler, the wasm build of esbuild for the dashboard, and the @types packages tsc reads), never the
//   linter, test runner, browser driver or the native esbuild builds for every other OS and CPU;
// - mnn-edge-licenses.inc: LICENSE and a LIC_FILES_CHKSUM entry for the license text of every shipped package.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LockEntry, PackageLock } from './stage-manifest.js';

const REGISTRY = 'https://registry.npmjs.org';

/** devDependencies the recipe's own build steps run (do_compile_ts, do_compile_dashboard). */
export const BUILD_TOOLS = ['typescript', 'esbuild-wasm'] as const;

/**
 * devDependencies bundled into the agent (package.json `bundledIntoAgent`, scripts/bundle-agent.mjs): fetched
 * for the build like the tools, and shipped inside the bundle, so their licenses (and their dependencies') are
 * the image's too.
 */
export const BUNDLED: readonly string[] =
  (
    JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'), 'utf8')) as {
      bundledIntoAgent?: string[];
    }
  ).bundledIntoAgent ?? [];

type Lock = PackageLock;

export function packageName(key: string): string {
  return key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
}

/** The lock key node's resolution finds for `name` required from the package at `fromKey`. */
function resolveKey(lock: Lock, fromKey: string, name: string): string | undefined {
  let base = fromKey;
  for (;;) {
    const candidate = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
    if (lock.packages[candidate] !== undefined) return candidate;
    if (base === '') return undefined;
    const cut = base.lastIndexOf('/node_modules/');
    base = cut === -1 ? '' : base.slice(0, cut);
  }
}

/** The build tools, the bundled packages, the @types packages, and everything they depend on: the dev part of the build shrinkwrap. */
export function buildToolKeys(lock: Lock, bundled: readonly string[] = BUNDLED): string[] {
  const root = lock.packages[''] ?? {};
  const dev = Object.keys(root.devDependencies ?? {});
  const wanted = [...BUILD_TOOLS, ...bundledOf(lock, bundled), ...dev.filter((n) => n.startsWith('@types/'))];
  for (const tool of BUILD_TOOLS) {
    if (!dev.includes(tool) && !(tool in (root.dependencies ?? {}))) {
      throw new Error(`package.json no longer lists the build tool ${tool}; update BUILD_TOOLS`);
    }
  }
  return closureOf(lock, wanted);
}

/** The lock keys of these top-level packages and of everything they depend on. */
function closureOf(lock: Lock, names: readonly string[]): string[] {
  const seen = new Set<string>();
  const queue = names.map((name) => {
    const key = resolveKey(lock, '', name);
    if (key === undefined) throw new Error(`package-lock.json has no entry for ${name}`);
    return key;
  });
  while (queue.length > 0) {
    const key = queue.pop()!;
    if (seen.has(key)) continue;
    seen.add(key);
    const entry = lock.packages[key] as LockEntry;
    for (const dep of Object.keys(entry.dependencies ?? {})) {
      const depKey = resolveKey(lock, key, dep);
      if (depKey !== undefined) queue.push(depKey);
    }
  }
  return [...seen].sort();
}

/**
 * npm-shrinkwrap.json for BitBake's npmsw fetcher (`dev=1` fetches its entries marked dev): production
 * packages and the build tools, each with a `resolved` tarball URL (our lock has none; the fetcher needs one)
 * and the lock's integrity.
 */
export function buildShrinkwrap(lockIn: PackageLock): PackageLock {
  const lock = lockIn as Lock;
  if ((lock.lockfileVersion ?? 0) < 2) {
    throw new Error(
      `package-lock.json lockfileVersion ${lock.lockfileVersion} is too old: the npmsw fetcher needs 2 or later`,
    );
  }
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (key !== '' && !entry.link && !entry.integrity)
      throw new Error(`package-lock.json: ${key} has no integrity; regenerate the lock with npm install`);
  }
  const tools = new Set(buildToolKeys(lock));
  const packages: Record<string, LockEntry> = {};
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (key === '') {
      const root = { ...(entry as LockEntry) };
      root.devDependencies = Object.fromEntries(
        Object.entries(root.devDependencies ?? {}).filter(([n]) => tools.has(`node_modules/${n}`)),
      );
      packages[key] = root;
      continue;
    }
    if (entry.link) continue;
    if (entry.dev === true && !tools.has(key)) continue;
    const name = packageName(key);
    const resolved =
      entry.resolved ?? `${REGISTRY}/${name}/-/${name.slice(name.lastIndexOf('/') + 1)}-${entry.version}.tgz`;
    packages[key] = { ...entry, resolved };
  }
  return { ...lock, packages };
}

// ---------------------------------------------------------------------------------------------------------
// Licenses of what the image ships

// LICENSE, LICENSE.md, license, COPYING, and the per-license files of dual-licensed packages (LICENSE-MIT.txt,
// LICENSE.APACHE2).
const LICENSE_FILE = /^(licen[cs]e|copying)([.-][a-z0-9.-]+)?$/i;

/** Production lock keys (what NPM_INSTALL_DEV = "0" installs into the image) and the bundled packages' closure. */
export function shippedKeys(lock: PackageLock, bundled: readonly string[] = BUNDLED): string[] {
  const installed = Object.entries(lock.packages)
    .filter(([key, e]) => key.startsWith('node_modules/') && e.dev !== true && e.link !== true)
    .map(([key]) => key);
  return [...new Set([...installed, ...closureOf(lock as Lock, bundledOf(lock, bundled))])].sort();
}

/** The bundled packages that are devDependencies (a production dependency is installed and shipped anyway). */
function bundledOf(lock: PackageLock, bundled: readonly string[]): string[] {
  const dev = lock.packages['']?.devDependencies ?? {};
  return bundled.filter((name) => name in dev);
}

export interface LicenseFile {
  /** Path relative to the recipe's ${S} (the project root, with npmsw's node_modules under it). */
  path: string;
  md5: string;
  beginline?: number;
  endline?: number;
}

function md5(data: Buffer | string): string {
  return createHash('md5').update(data).digest('hex');
}

/** The package's license texts, or (for a package that ships none) the `license` line of its package.json. */
export function licenseFilesOf(root: string, key: string): LicenseFile[] {
  const dir = join(root, key);
  if (!existsSync(dir)) throw new Error(`${key} is not installed in ${root} (run npm ci)`);
  const files = readdirSync(dir)
    .filter((n) => LICENSE_FILE.test(n))
    .sort();
  if (files.length > 0)
    return files.map((f) => ({ path: `${key}/${f}`, md5: md5(readFileSync(join(dir, f))) }));
  const lines = readFileSync(join(dir, 'package.json'), 'utf8').split(/(?<=\n)/);
  const index = lines.findIndex((l) => /^\s*"license"\s*:/.test(l));
  if (index === -1) throw new Error(`${key} has neither a license file nor a "license" in package.json`);
  return [{ path: `${key}/package.json`, md5: md5(lines[index]!), beginline: index + 1, endline: index + 1 }];
}

function spdxAlternativesOf(expression: string): string[][] {
  return expression
    .replace(/[()]/g, ' ')
    .split(/\s+AND\s+/)
    .map((part) =>
      part
        .split(/\s+OR\s+/)
        .map((s) => s.trim())
        .filter(Boolean),
    );
}

/** The BitBake LICENSE: the project's own license first, then each license a shipped package is used under. */
export function shippedLicense(lock: PackageLock): string {
  const own = lock.packages['']?.license;
  if (!own) throw new Error('package.json has no license');
  const chosen = new Map<string, number>([[own, Number.POSITIVE_INFINITY]]);
  const choices: string[][] = [];
  for (const key of shippedKeys(lock)) {
    const expression = lock.packages[key]!.license;
    if (!expression) throw new Error(`npm dependency ${packageName(key)} declares no license`);
    for (const alternatives of spdxAlternativesOf(expression)) {
      if (alternatives.length === 1) chosen.set(alternatives[0]!, (chosen.get(alternatives[0]!) ?? 0) + 1);
      else choices.push(alternatives);
    }
  }
  // An "A OR B" package is used under a license the image carries anyway, when it offers one.
  for (const alternatives of choices) {
    const pick = alternatives.find((a) => chosen.has(a)) ?? alternatives[0]!;
    chosen.set(pick, (chosen.get(pick) ?? 0) + 1);
  }
  return [...chosen.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([name]) => name)
    .join(' & ');
}

/** mnn-edge-licenses.inc: LICENSE and LIC_FILES_CHKSUM for the project and every shipped npm package. */
export function licenseInclude(lock: PackageLock, root: string): string {
  const files: LicenseFile[] = [
    { path: 'LICENSE', md5: md5(readFileSync(join(root, 'LICENSE'))) },
    ...shippedKeys(lock).flatMap((key) => licenseFilesOf(root, key)),
  ];
  const entry = (f: LicenseFile) =>
    `file://${f.path};${f.beginline === undefined ? '' : `beginline=${f.beginline};endline=${f.endline};`}md5=${f.md5}`;
  return [
    '# Generated from package-lock.json by `npm run stage -- --write-shrinkwrap`; do not edit.',
    "# The project's license and the license text of every production npm package the image ships (npmsw",
    '# unpacks them under S/node_modules), so do_populate_lic collects them and a changed text stops the build.',
    `LICENSE = "${shippedLicense(lock)}"`,
    `LIC_FILES_CHKSUM = " \\\n${files.map((f) => `    ${entry(f)} \\\n`).join('')}"`,
    '',
  ].join('\n');
}
