import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type MetadataFile, parseMetadata, variableValue } from './bitbake-metadata.js';
import { buildShrinkwrap, licenseInclude } from './build-shrinkwrap.js';
import { checkLicFilesChksum, checkNpmLicenses, licenseTerms } from './layer-licenses.js';
import type { Problem } from './layer-problem.js';
import { type LockEntry, type PackageLock, parseStageManifest } from './stage-manifest.js';

export { type Assignment, type MetadataFile, parseMetadata, variableValue } from './bitbake-metadata.js';
export { COMMON_LICENSE_MD5, licenseTerms, md5OfLines, spdxAlternatives } from './layer-licenses.js';

export type { Problem } from './layer-problem.js';

// ---------------------------------------------------------------------------------------------------------
// Paths

/** Prefixes that exist on a build host but never belong in a recipe (use ${S}, ${WORKDIR}, ${STAGING_*}). */
const HOST_PATH =
  /(^|[\s"'=:;]|-[IL])(\/home\/|\/root\/|\/tmp\/|\/work\/|\/opt\/|\/usr\/local\/|\/mnt\/|\/media\/|\/Users\/|\/usr\/include\b|\/usr\/lib\/x86_64-linux-gnu\b)/;

function checkHostPaths(meta: MetadataFile, file: string): Problem[] {
  return meta.lines
    .filter((l) => HOST_PATH.test(l.text))
    .map((l) => ({
      file,
      message: `line ${l.line}: host path ${HOST_PATH.exec(l.text)![2]}… (use \${S}, \${WORKDIR} or \${STAGING_DIR_TARGET})`,
    }));
}

/** A recipe or append whose package is per tune must not read the machine: two machines of one tune would build
 *  different packages under one name and architecture (yocto-check-layer's machine-signature test for BSPs). */
function checkMachineReads(meta: MetadataFile, file: string, perMachine: boolean): Problem[] {
  const setsMachineArch = meta.assignments.some(
    (a) => a.name === 'PACKAGE_ARCH' && a.value.includes(`\${MACHINE_ARCH}`),
  );
  if (perMachine || setsMachineArch) return [];
  return meta.lines
    .filter((l) => /\bMACHINE(?:_FEATURES)?\b/.test(l.text))
    .map((l) => ({
      file,
      message: `line ${l.line}: reads MACHINE or MACHINE_FEATURES, but the package is per tune (set PACKAGE_ARCH = "\${MACHINE_ARCH}" or move it into a per-board append)`,
    }));
}

function filesPath(recipeFile: string, bpn: string, extra: string[]): string[] {
  const dir = dirname(recipeFile);
  const bp = basename(recipeFile).replace(/\.(bb|bbappend)$/, '');
  return [...extra, join(dir, bp), join(dir, bpn), join(dir, 'files')];
}

function bpnOf(recipeFile: string): string {
  return basename(recipeFile)
    .replace(/\.(bb|bbappend)$/, '')
    .split('_')[0]!;
}

function checkSrcUri(meta: MetadataFile, recipeFile: string, file: string, extraDirs: string[]): Problem[] {
  const problems: Problem[] = [];
  // Inline Python (`${@bb.utils.contains(...)}`) decides at parse time; its URLs are not checked here.
  const uris = meta.assignments
    .filter((a) => a.name === 'SRC_URI')
    .flatMap((a) => a.value.replace(/\$\{@[^}]*\}/g, ' ').split(/\s+/))
    .filter(Boolean);
  const bpn = bpnOf(recipeFile);
  const dirs = filesPath(recipeFile, bpn, extraDirs);
  for (const uri of uris) {
    const [location] = uri.split(';');
    if (location!.startsWith('file://')) {
      const name = location!.slice('file://'.length);
      if (!dirs.some((d) => existsSync(join(d, name)))) {
        problems.push({
          file,
          message: `SRC_URI ${location} is in none of ${dirs.map((d) => relative(dirname(recipeFile), d) || '.').join(', ')}`,
        });
      }
    } else if (location!.startsWith('npmsw://')) {
      const path = location!
        .slice('npmsw://'.length)
        .replace(`\${THISDIR}`, dirname(recipeFile))
        .replace(`\${BPN}`, bpn);
      if (!existsSync(path)) {
        problems.push({
          file,
          message: `SRC_URI ${location}: ${relative(dirname(recipeFile), path)} does not exist (npm run stage -- --write-shrinkwrap)`,
        });
      }
    } else if (!/^(git|gitsm|https?|npm|crate):\/\//.test(location!)) {
      problems.push({ file, message: `SRC_URI ${location} uses a scheme this layer does not expect` });
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------
// layer.conf

export const KNOWN_SERIES = ['scarthgap', 'styhead', 'walnascar', 'whinlatter'];

function checkLayerConf(layerDir: string): Problem[] {
  const path = join(layerDir, 'conf', 'layer.conf');
  const file = relative(layerDir, path);
  if (!existsSync(path)) return [{ file, message: 'conf/layer.conf is missing' }];
  const meta = parseMetadata(readFileSync(path, 'utf8'));
  const problems: Problem[] = [];
  const need = (cond: boolean, message: string) => {
    if (!cond) problems.push({ file, message });
  };
  need((variableValue(meta, 'BBPATH') ?? '').includes(`\${LAYERDIR}`), `BBPATH must include \${LAYERDIR}`);
  need(
    /\$\{LAYERDIR\}\/recipes-/.test(variableValue(meta, 'BBFILES') ?? ''),
    `BBFILES must add \${LAYERDIR}/recipes-*`,
  );
  const collections = (variableValue(meta, 'BBFILE_COLLECTIONS') ?? '').split(/\s+/).filter(Boolean);
  need(
    collections.length === 1,
    `BBFILE_COLLECTIONS must add exactly one collection, got ${collections.length}`,
  );
  const name = collections[0];
  if (name === undefined) return problems;
  need(
    variableValue(meta, `BBFILE_PATTERN_${name}`) === `^\${LAYERDIR}/`,
    `BBFILE_PATTERN_${name} must be "^\${LAYERDIR}/"`,
  );
  need(
    /^[0-9]+$/.test(variableValue(meta, `BBFILE_PRIORITY_${name}`) ?? ''),
    `BBFILE_PRIORITY_${name} must be an integer`,
  );
  need(
    /^[0-9]+$/.test(variableValue(meta, `LAYERVERSION_${name}`) ?? ''),
    `LAYERVERSION_${name} must be an integer`,
  );
  const series = (variableValue(meta, `LAYERSERIES_COMPAT_${name}`) ?? '').split(/\s+/).filter(Boolean);
  need(
    series.includes('scarthgap'),
    `LAYERSERIES_COMPAT_${name} must include scarthgap (Node 20 in meta-oe)`,
  );
  for (const s of series)
    need(KNOWN_SERIES.includes(s), `LAYERSERIES_COMPAT_${name} names unknown series ${s}`);
  const deps = (variableValue(meta, `LAYERDEPENDS_${name}`) ?? '').split(/\s+/);
  // nodejs is in meta-oe; mosquitto, which mnn-edge-mosquitto pulls in, in meta-networking.
  for (const d of ['core', 'openembedded-layer', 'networking-layer'])
    need(deps.includes(d), `LAYERDEPENDS_${name} must include ${d}`);
  for (const entry of (variableValue(meta, 'BBFILES_DYNAMIC') ?? '').split(/\s+/).filter(Boolean)) {
    const m = /^([^:]+):\$\{LAYERDIR\}\/(dynamic-layers\/[^/*]+)\//.exec(entry);
    if (!m)
      problems.push({
        file,
        message: `BBFILES_DYNAMIC entry ${entry} is not COLLECTION:\${LAYERDIR}/dynamic-layers/…`,
      });
    else if (!existsSync(join(layerDir, m[2]!))) {
      problems.push({ file, message: `BBFILES_DYNAMIC names ${m[2]}, which does not exist` });
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

export interface CheckOptions {
  layerDir: string;
  /** The project tree the mnn-edge recipe builds from (its ${S}): LIC_FILES_CHKSUM and package-lock.json. */
  sourceRoot: string;
  /** Source trees of the layer's other recipes by recipe name (e.g. mnn → an MNN checkout at its SRCREV), for
   *  their LIC_FILES_CHKSUM; a recipe without one has only its common-license entries checked. */
  otherSources?: Record<string, string>;
}

/** The recipe's text with each `require`/`include` of a file next to it put in its place, as BitBake does. */
function recipeText(path: string, problems: Problem[], file: string): string {
  return readFileSync(path, 'utf8').replace(
    /^(require|include)\s+(\S+)\s*$/gm,
    (_line, kind: string, name: string) => {
      const included = join(dirname(path), name);
      if (existsSync(included)) return readFileSync(included, 'utf8');
      if (kind === 'require')
        problems.push({ file, message: `require ${name}: no such file next to the recipe` });
      return '';
    },
  );
}

function checkRecipe(
  path: string,
  layerDir: string,
  sourceRoot: string,
  otherSources: Record<string, string>,
): Problem[] {
  const file = relative(layerDir, path);
  const problems: Problem[] = [];
  const meta = parseMetadata(recipeText(path, problems, file));
  const isImage = meta.inherits.some((i) => i === 'image' || i === 'core-image');
  const isPackagegroup = meta.inherits.includes('packagegroup');
  const required = ['SUMMARY', 'LICENSE'];
  if (!isImage && !isPackagegroup) required.push('LIC_FILES_CHKSUM', 'SRC_URI');
  if (meta.inherits.includes('systemd')) required.push('SYSTEMD_SERVICE');
  if (meta.inherits.includes('useradd')) required.push('USERADD_PACKAGES');
  for (const name of required) {
    const present = meta.assignments.some((a) => a.name === name);
    if (!present) problems.push({ file, message: `required variable ${name} is not set` });
  }
  const license = variableValue(meta, 'LICENSE');
  let licenseParses = license !== undefined;
  if (license !== undefined) {
    try {
      licenseTerms(license);
    } catch (err) {
      licenseParses = false;
      problems.push({ file, message: (err as Error).message });
    }
  }
  const lic = variableValue(meta, 'LIC_FILES_CHKSUM');
  const bpn = bpnOf(path);
  const licRoot = bpn === 'mnn-edge' ? sourceRoot : otherSources[bpn];
  if (license !== undefined && licenseParses && lic !== undefined) {
    const entries =
      licRoot === undefined
        ? lic
            .split(/\s+/)
            .filter((e) => e.startsWith(`file://\${COMMON_LICENSE_DIR}`))
            .join(' ')
        : lic;
    problems.push(...checkLicFilesChksum(entries, license, licRoot ?? sourceRoot, file));
  }
  if (meta.inherits.includes('npm')) {
    // An npm recipe ships the project's production dependencies: its LICENSE, PV and shrinkwrap follow the lock.
    const lock = JSON.parse(readFileSync(join(sourceRoot, 'package-lock.json'), 'utf8')) as PackageLock;
    const own = lock.packages['']?.license ?? '';
    if (license !== undefined && licenseParses)
      problems.push(...checkNpmLicenses(license, lock.packages, file, own));
    problems.push(...checkShrinkwrap(path, lock.packages, layerDir));
    problems.push(...checkLicenseInclude(path, lock, layerDir, sourceRoot));
    const pv = variableValue(meta, 'PV') ?? '';
    const version = lock.packages['']?.version;
    if (version && !pv.startsWith(version)) {
      problems.push({ file, message: `PV ${pv} does not start with package.json's version ${version}` });
    }
  }
  problems.push(...checkSrcUri(meta, path, file, []));
  problems.push(...checkHostPaths(meta, file));
  problems.push(...checkMachineReads(meta, file, isImage));
  problems.push(...checkStageManifest(path, meta, layerDir));
  return problems;
}

function checkShrinkwrap(recipePath: string, lock: Record<string, LockEntry>, layerDir: string): Problem[] {
  const path = join(dirname(recipePath), bpnOf(recipePath), 'npm-shrinkwrap.json');
  const file = relative(layerDir, path);
  if (!existsSync(path)) return []; // reported by the SRC_URI check
  const problems: Problem[] = [];
  const sw = JSON.parse(readFileSync(path, 'utf8')) as {
    lockfileVersion?: number;
    packages?: Record<string, LockEntry>;
  };
  if ((sw.lockfileVersion ?? 0) < 2)
    problems.push({ file, message: 'lockfileVersion must be 2 or later for npmsw' });
  const packages = sw.packages ?? {};
  // The build shrinkwrap: production packages and the build tools, nothing else (scripts/build-shrinkwrap.ts).
  let expected: Record<string, LockEntry>;
  try {
    expected = buildShrinkwrap({ lockfileVersion: 3, packages: lock }).packages;
  } catch (err) {
    return [{ file, message: (err as Error).message }];
  }
  for (const [key, entry] of Object.entries(expected)) {
    if (key === '') continue;
    const s = packages[key];
    if (s === undefined)
      problems.push({ file, message: `${key} is in package-lock.json but not in the shrinkwrap` });
    else if (s.version !== entry.version || s.integrity !== entry.integrity) {
      problems.push({
        file,
        message: `${key} is ${s.version} in the shrinkwrap, ${entry.version} in package-lock.json`,
      });
    } else if (!s.resolved) problems.push({ file, message: `${key} has no resolved URL, which npmsw needs` });
  }
  for (const key of Object.keys(packages)) {
    if (key === '' || expected[key] !== undefined) continue;
    problems.push({
      file,
      message:
        lock[key] === undefined
          ? `${key} is in the shrinkwrap but no longer in package-lock.json`
          : `${key} is in the shrinkwrap but is neither a production dependency nor a build tool`,
    });
  }
  return problems.length > 0
    ? [
        ...problems.slice(0, 5),
        ...(problems.length > 5
          ? [{ file, message: `…and ${problems.length - 5} more; regenerate it` }]
          : []),
      ]
    : [];
}

function checkLicenseInclude(
  recipePath: string,
  lock: PackageLock,
  layerDir: string,
  sourceRoot: string,
): Problem[] {
  const path = join(dirname(recipePath), 'mnn-edge-licenses.inc');
  if (!existsSync(path)) return [];
  const file = relative(layerDir, path);
  let expected: string;
  try {
    expected = licenseInclude(lock, sourceRoot);
  } catch (err) {
    return [{ file, message: (err as Error).message }];
  }
  return readFileSync(path, 'utf8') === expected
    ? []
    : [{ file, message: 'out of date with package-lock.json (npm run stage -- --write-shrinkwrap)' }];
}

function checkStageManifest(recipePath: string, meta: MetadataFile, layerDir: string): Problem[] {
  const path = join(dirname(recipePath), 'files', 'stage-manifest.txt');
  if (
    !existsSync(path) ||
    !meta.assignments.some((a) => a.name === 'SRC_URI' && a.value.includes('stage-manifest.txt'))
  ) {
    return [];
  }
  const file = relative(layerDir, path);
  let manifest: ReturnType<typeof parseStageManifest>;
  try {
    manifest = parseStageManifest(readFileSync(path, 'utf8'), file);
  } catch (err) {
    return [{ file, message: (err as Error).message }];
  }
  const srcUri = meta.assignments
    .filter((a) => a.name === 'SRC_URI')
    .map((a) => a.value)
    .join(' ');
  return manifest.entries
    .filter((e) => e.kind === 'file' && e.source.from === 'layer')
    .flatMap((e) => {
      const name = e.kind === 'file' ? e.source.path : '';
      return srcUri.split(/\s+/).includes(`file://${name}`)
        ? []
        : [{ file, message: `layer:${name} is installed but not in the recipe's SRC_URI` }];
    });
}

function checkBbappend(path: string, layerDir: string): Problem[] {
  const file = relative(layerDir, path);
  const meta = parseMetadata(readFileSync(path, 'utf8'));
  const extra = meta.assignments
    .filter((a) => a.name === 'FILESEXTRAPATHS')
    .flatMap((a) => a.value.split(':'))
    .filter((p) => p.includes(`\${THISDIR}`))
    .map((p) => p.replace(`\${THISDIR}`, dirname(path)));
  return [
    ...checkSrcUri(meta, path, file, extra),
    ...checkHostPaths(meta, file),
    ...checkMachineReads(meta, file, false),
  ];
}

export function checkLayer(options: CheckOptions): Problem[] {
  const { layerDir, sourceRoot } = options;
  const problems = checkLayerConf(layerDir);
  const files = walk(layerDir);
  const recipes = files.filter((f) => f.endsWith('.bb'));
  if (recipes.length === 0) problems.push({ file: '.', message: 'the layer has no recipes' });
  for (const f of recipes) problems.push(...checkRecipe(f, layerDir, sourceRoot, options.otherSources ?? {}));
  for (const f of files.filter((f) => f.endsWith('.bbappend'))) problems.push(...checkBbappend(f, layerDir));
  for (const f of files.filter((f) => f.endsWith('.conf') && f.includes(`${join('conf', '')}`))) {
    problems.push(...checkHostPaths(parseMetadata(readFileSync(f, 'utf8')), relative(layerDir, f)));
  }
  return problems;
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const layerDir = resolve(process.argv[2] ?? join(repoRoot, 'yocto', 'meta-mnn-edge'));
  // MNN_SRC (an MNN checkout at the mnn recipe's SRCREV) lets the mnn recipe's LIC_FILES_CHKSUM be checked too.
  const mnnSrc = process.env['MNN_SRC'];
  const problems = checkLayer({
    layerDir,
    sourceRoot: repoRoot,
    ...(mnnSrc ? { otherSources: { mnn: mnnSrc } } : {}),
  });
  for (const p of problems) console.error(`${p.file}: ${p.message}`);
  console.log(problems.length === 0 ? `${layerDir}: ok` : `${problems.length} problem(s)`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
