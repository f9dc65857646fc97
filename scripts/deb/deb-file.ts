// One binary package from a directory tree: the DEBIAN/ control area (control, conffiles, md5sums, maintainer
// scripts), the documentation Debian requires of every package, then dpkg-deb. Plain dpkg-deb rather than
// debhelper: the trees are staged by scripts/stage.ts, the same staging the Yocto recipe's layout comes from.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';

/** No project address exists yet: a release sets MNN_EDGE_DEB_MAINTAINER (packaging/debian/LINTIAN.md). */
export const MAINTAINER =
  process.env['MNN_EDGE_DEB_MAINTAINER'] || 'mnn-edge developers <mnn-edge@localhost>';

export interface DebPackage {
  name: string;
  version: string;
  arch: string;
  depends: string[];
  recommends?: string[];
  enhances?: string[];
  section: string;
  summary: string;
  description: string;
  /** Absolute paths (as on the target) that are conffiles. */
  conffiles?: string[];
  /** Maintainer scripts by name (preinst, postinst, prerm, postrm), with their text. */
  scripts?: Record<string, string>;
  /** The machine-readable copyright file (usr/share/doc/NAME/copyright). */
  copyright: string;
}

function walk(dir: string, visit: (path: string) => void): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (st.isDirectory()) walk(path, visit);
    else visit(path);
  }
}

/** Installed-Size in KiB, as dpkg-gencontrol counts: every file's size rounded up, plus one per entry. */
function installedSizeKiB(root: string): number {
  let kib = 0;
  walk(root, (p) => {
    if (relative(root, p).startsWith('DEBIAN')) return;
    kib += Math.ceil(lstatSync(p).size / 1024) || 1;
  });
  return kib;
}

/** Folded description lines: a leading space, an empty line written " .". */
function describe(text: string): string {
  return text
    .trim()
    .split('\n')
    .map((l) => (l.trim() === '' ? ' .' : ` ${l}`))
    .join('\n');
}

/** Directories 0755, files 0644 unless executable (then 0755), shared objects 0644: what lintian expects, whatever
 *  umask staged them. */
function normaliseModes(root: string): void {
  const visit = (dir: string) => {
    chmodSync(dir, 0o755);
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const st = lstatSync(path);
      if (st.isSymbolicLink()) continue;
      if (st.isDirectory()) visit(path);
      else chmodSync(path, st.mode & 0o111 && !/\.(so(\..*)?|node)$/.test(name) ? 0o755 : 0o644);
    }
  };
  visit(root);
}

function writeDocs(root: string, pkg: DebPackage, changelog: string): void {
  const doc = join(root, 'usr', 'share', 'doc', pkg.name);
  mkdirSync(doc, { recursive: true });
  writeFileSync(join(doc, 'copyright'), pkg.copyright);
  // A native package's changelog is changelog.gz; -n: no name or time in the gzip header (reproducible).
  writeFileSync(join(doc, 'changelog.gz'), gzipSync(changelog, { level: 9 }));
}

export function changelogEntry(name: string, version: string, date: Date): string {
  const rfc2822 = date.toUTCString().replace('GMT', '+0000');
  return (
    `${name} (${version}) unstable; urgency=medium\n\n` +
    `  * Built from the mnn-edge source tree by scripts/package-deb.ts.\n\n` +
    ` -- ${MAINTAINER}  ${rfc2822}\n`
  );
}

/** Writes DEBIAN/ into root and builds OUT_DIR/NAME_VERSION_ARCH.deb; returns its path. */
export function buildDeb(root: string, pkg: DebPackage, outDir: string, date: Date): string {
  writeDocs(root, pkg, changelogEntry(pkg.name, pkg.version, date));
  normaliseModes(root);
  const control = join(root, 'DEBIAN');
  mkdirSync(control, { recursive: true });
  const fields = [
    `Package: ${pkg.name}`,
    `Version: ${pkg.version}`,
    `Architecture: ${pkg.arch}`,
    `Maintainer: ${MAINTAINER}`,
    `Installed-Size: ${installedSizeKiB(root)}`,
    ...(pkg.depends.length > 0 ? [`Depends: ${pkg.depends.join(', ')}`] : []),
    ...(pkg.recommends?.length ? [`Recommends: ${pkg.recommends.join(', ')}`] : []),
    ...(pkg.enhances?.length ? [`Enhances: ${pkg.enhances.join(', ')}`] : []),
    `Section: ${pkg.section}`,
    'Priority: optional',
    `Description: ${pkg.summary}`,
    describe(pkg.description),
  ];
  writeFileSync(join(control, 'control'), `${fields.join('\n')}\n`);
  if (pkg.conffiles?.length) writeFileSync(join(control, 'conffiles'), `${pkg.conffiles.join('\n')}\n`);
  for (const [name, text] of Object.entries(pkg.scripts ?? {})) {
    writeFileSync(join(control, name), text, { mode: 0o755 });
    chmodSync(join(control, name), 0o755);
  }
  const sums: string[] = [];
  walk(root, (p) => {
    const rel = relative(root, p);
    if (rel.startsWith('DEBIAN') || lstatSync(p).isSymbolicLink()) return;
    sums.push(`${createHash('md5').update(readFileSync(p)).digest('hex')}  ${rel}`);
  });
  writeFileSync(join(control, 'md5sums'), `${sums.sort().join('\n')}\n`, { mode: 0o644 });
  mkdirSync(outDir, { recursive: true });
  const out = join(outDir, `${pkg.name}_${pkg.version}_${pkg.arch}.deb`);
  const r = spawnSync('dpkg-deb', ['--root-owner-group', '-Zxz', '--build', root, out], { encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error(`dpkg-deb --build ${pkg.name} failed: ${(r.stderr || r.stdout).trim()}`);
  return out;
}

/** Copies src (file or tree) to root/dest, creating parents. */
export function place(root: string, dest: string, src: string): void {
  const to = join(root, dest);
  mkdirSync(join(to, '..'), { recursive: true });
  cpSync(src, to, { recursive: statSync(src).isDirectory(), verbatimSymlinks: true });
}
