// The license checks of scripts/check-layer.ts: LICENSE terms and SPDX choices, the npm dependencies' licenses
// against the recipe's, and LIC_FILES_CHKSUM lines.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Problem } from './layer-problem.js';
import type { LockEntry } from './stage-manifest.js';

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

export function checkNpmLicenses(
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

export function checkLicFilesChksum(
  value: string,
  license: string,
  sourceRoot: string,
  file: string,
): Problem[] {
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
