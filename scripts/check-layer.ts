// `tsx scripts/check-layer.ts [LAYER_DIR]`: our own checks of meta-mnn-edge, fast enough for every test run and
// independent of a BitBake install. It catches what breaks a build hours in, or silently ships a wrong image:
// a recipe without its required variables, a LICENSE that does not cover the npm dependencies, a stale
// LIC_FILES_CHKSUM, a SRC_URI file that is not in the layer, a path from someone's build host, a layer.conf
// that BitBake would reject, a shrinkwrap that no longer matches package-lock.json.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildShrinkwrap, licenseInclude } from './build-shrinkwrap.js';
import { type LockEntry, type PackageLock, parseStageManifest } from './stage-manifest.js';

export interface Problem {
  file: string;
  message: string;
}

// ---------------------------------------------------------------------------------------------------------
// A small reader for BitBake metadata: assignments with their operators and overrides, inherit lines, and
// shell/python function bodies (skipped). Enough to check what a recipe declares, not to evaluate it.

export interface Assignment {
  name: string;
  /** `:append`, `:pn-foo`, … after the variable name, without the leading colon. */
  overrides: string[];
  op: string;
  value: string;
  line: number;
}

export interface MetadataFile {
  assignments: Assignment[];
  inherits: string[];
  /** Non-comment lines with their numbers (function bodies included), for the host path scan. */
  lines: { text: string; line: number }[];
}

const ASSIGNMENT =
  /^(?:export\s+)?([A-Za-z0-9_${}.\-/+~]+)((?::[A-Za-z0-9_${}.\-+~]+)*)\s*(\?\?=|\?=|:=|\+=|=\+|\.=|=\.|=)\s*"(.*)"\s*$/s;

export function parseMetadata(text: string): MetadataFile {
  const assignments: Assignment[] = [];
  const inherits: string[] = [];
  const lines: { text: string; line: number }[] = [];
  const raw = text.split('\n');
  let inFunction = false;
  for (let i = 0; i < raw.length; i++) {
    const start = i + 1;
    let line = raw[i]!;
    // Continuation lines belong to the statement that starts here.
    while (line.endsWith('\\') && i + 1 < raw.length) line = line.slice(0, -1) + '\n' + raw[++i]!;
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    lines.push({ text: line, line: start });
    if (inFunction) {
      if (/^}\s*$/.test(line)) inFunction = false;
      continue;
    }
    if (
      /^(?:python\s+)?[A-Za-z0-9_${}:.-]*\s*\(\)\s*\{\s*$/.test(trimmed) ||
      /^python\s+[^=]*\{\s*$/.test(trimmed)
    ) {
      inFunction = true;
      continue;
    }
    const inherit = /^inherit\s+(.+)$/.exec(trimmed);
    if (inherit) {
      inherits.push(...inherit[1]!.split(/\s+/).filter(Boolean));
      continue;
    }
    const m = ASSIGNMENT.exec(trimmed);
    if (m) {
      assignments.push({
        name: m[1]!,
        overrides: m[2] ? m[2].slice(1).split(':') : [],
        op: m[3]!,
        value: m[4]!.replace(/\s*\n\s*/g, ' '),
        line: start,
      });
    }
  }
  return { assignments, inherits, lines };
}

/** The value a variable has after the plain (override-free) assignments, in order. */
export function variableValue(meta: MetadataFile, name: string): string | undefined {
  let value: string | undefined;
  for (const a of meta.assignments) {
    if (a.name !== name) continue;
    const appendLike = a.overrides.includes('append') || a.op === '+=' || a.op === '.=';
    const prependLike = a.overrides.includes('prepend') || a.op === '=+' || a.op === '=.';
    if (a.overrides.some((o) => o !== 'append' && o !== 'prepend')) continue;
    const sep = a.op === '.=' || a.op === '=.' || a.overrides.length > 0 ? '' : ' ';
    if (appendLike) value = (value ?? '') + sep + a.value;
    else if (prependLike) value = a.value + sep + (value ?? '');
    else if ((a.op === '?=' || a.op === '??=') && value !== undefined) continue;
    else value = a.value;
  }
  return value?.trim();
}

// ---------------------------------------------------------------------------------------------------------
// Licenses

/** md5 of poky's meta/files/common-licenses/<NAME>, for LIC_FILES_CHKSUM entries pointing there. */
export const COMMON_LICENSE_MD5: Record<string, string> = {
  'Apache-2.0': '89aea4e17d99a7cacdbeed46a0096b10',
  MIT: '0835ade698e0bcf8506ecda2f7b4f302',
};

/** Each `&`-joined term of a BitBake LICENSE; a term is one name or an `|` choice (parentheses dropped). */
export function licenseTerms(license: string): string[][] {
  if (!/^[A-Za-z0-9.+\-_ &|()]+$/.test(license))
    throw new Error(`LICENSE has characters BitBake rejects: "${license}"`);
  return license
    .split('&')
    .map((term) =>
      term
        .replace(/[()]/g, ' ')
        .split('|')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .filter((t) => t.length > 0);
}

/** SPDX expression of an npm package → its alternatives ("(MIT OR Apache-2.0)" → ["MIT", "Apache-2.0"]). */
export function spdxAlternatives(expression: string): string[][] {
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

function checkNpmLicenses(
  license: string,
  lock: Record<string, LockEntry>,
  file: string,
  ownLicense: string,
): Problem[] {
  const problems: Problem[] = [];
  const declared = new Set(licenseTerms(license).flat());
  const used = new Set<string>(spdxAlternatives(ownLicense).flat());
  for (const [key, entry] of Object.entries(lock)) {
    if (!key.startsWith('node_modules/') || entry.dev || entry.link) continue;
    const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    if (!entry.license) {
      problems.push({ file, message: `npm dependency ${name} declares no license in package-lock.json` });
      continue;
    }
    for (const alternatives of spdxAlternatives(entry.license)) {
      const covered = alternatives.filter((a) => declared.has(a));
      if (covered.length === 0) {
        problems.push({
          file,
          message: `LICENSE does not cover ${name} (${entry.license}); add ${alternatives.join(' or ')}`,
        });
      }
      for (const a of covered) used.add(a);
    }
  }
  for (const name of declared) {
    if (!used.has(name))
      problems.push({ file, message: `LICENSE names ${name}, which no shipped package uses` });
  }
  return problems;
}

export function md5OfLines(text: Buffer, beginline?: number, endline?: number): string {
  if (beginline === undefined && endline === undefined) return createHash('md5').update(text).digest('hex');
  const lines = text.toString('utf8').split(/(?<=\n)/);
  const from = (beginline ?? 1) - 1;
  const to = endline ?? lines.length;
  return createHash('md5').update(lines.slice(from, to).join('')).digest('hex');
}

function checkLicFilesChksum(value: string, license: string, sourceRoot: string, file: string): Problem[] {
  const problems: Problem[] = [];
  const declared = new Set(licenseTerms(license).flat());
  for (const entry of value.split(/\s+/).filter(Boolean)) {
    const [url, ...params] = entry.split(';');
    const p = Object.fromEntries(params.map((kv) => kv.split('=') as [string, string]));
    if (!url?.startsWith('file://')) {
      problems.push({ file, message: `LIC_FILES_CHKSUM entry is not a file:// URL: ${entry}` });
      continue;
    }
    if (!p['md5']) {
      problems.push({ file, message: `LIC_FILES_CHKSUM entry has no md5: ${entry}` });
      continue;
    }
    const path = url.slice('file://'.length);
    const common = /^\$\{COMMON_LICENSE_DIR\}\/(.+)$/.exec(path);
    if (common) {
      const known = COMMON_LICENSE_MD5[common[1]!];
      if (known === undefined) problems.push({ file, message: `unknown common license file ${common[1]}` });
      else if (known !== p['md5']) {
        problems.push({
          file,
          message: `LIC_FILES_CHKSUM md5 for ${common[1]} is ${p['md5']}, expected ${known}`,
        });
      }
      if (!declared.has(common[1]!)) {
        problems.push({
          file,
          message: `LIC_FILES_CHKSUM points at ${common[1]} but LICENSE does not name it`,
        });
      }
      continue;
    }
    const full = join(sourceRoot, path);
    if (!existsSync(full)) {
      problems.push({ file, message: `LIC_FILES_CHKSUM file ${path} does not exist in the source tree` });
      continue;
    }
    const begin = p['beginline'] ? Number(p['beginline']) : undefined;
    const end = p['endline'] ? Number(p['endline']) : undefined;
    const actual = md5OfLines(readFileSync(full), begin, end);
    if (actual !== p['md5']) {
      const range = begin !== undefined || end !== undefined ? ` lines ${begin ?? 1}-${end ?? 'end'}` : '';
      problems.push({
        file,
        message: `LIC_FILES_CHKSUM md5 of ${path}${range} is ${actual}, the recipe says ${p['md5']}`,
      });
    }
  }
  return problems;
}

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
