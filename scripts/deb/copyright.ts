// usr/share/doc/<package>/copyright of each package, in Debian's machine-readable format (DEP-5). The licenses of
// the bundled npm packages come from package-lock.json (what npm recorded from each package.json); each package
// directory also keeps its own license file, as the Yocto recipe's license manifest does.
import { type PackageLock, productionPackages } from '../stage.js';

const HEADER = 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n';
const APACHE =
  'License: Apache-2.0\n On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0.\n';

export function agentCopyright(lock: PackageLock): string {
  const byLicense = new Map<string, string[]>();
  for (const key of productionPackages(lock)) {
    const license = lock.packages[key]?.license ?? 'see the package directory';
    const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const names = byLicense.get(license) ?? [];
    if (!names.includes(name)) names.push(name);
    byLicense.set(license, names);
  }
  const bundled = [...byLicense.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([license, names]) => ` ${license}: ${names.sort().join(', ')}`)
    .join('\n');
  return (
    `${HEADER}Upstream-Name: mnn-edge\n\n` +
    `Files: *\nCopyright: 2025-2026 mnn-edge developers\n${APACHE}\n` +
    'Files: usr/lib/node_modules/mnn-edge/node_modules/*\n' +
    'Copyright: the authors of each npm package (see its package.json and license file)\n' +
    'License: bundled-npm-packages\n' +
    ' The production dependencies, each under its own license (its license file is in\n' +
    ' its directory), by license as package-lock.json records them:\n' +
    `${bundled}\n`
  );
}

export function engineCopyright(): string {
  return (
    `${HEADER}Upstream-Name: mnn-edge-engine\nSource: https://github.com/alibaba/MNN\n\n` +
    `Files: *\nCopyright: 2025-2026 mnn-edge developers\n 2018 Alibaba Group Holding Limited (MNN)\n${APACHE}`
  );
}

/** Node's LICENSE covers node itself and every library built into the binary; it goes in whole. */
export function nodeCopyright(nodeLicense: string): string {
  const indented = nodeLicense
    .trimEnd()
    .split('\n')
    .map((l) => (l.trim() === '' ? ' .' : ` ${l}`))
    .join('\n');
  return (
    `${HEADER}Upstream-Name: node\nSource: https://nodejs.org/dist/\n\n` +
    `Files: *\nCopyright: Node.js contributors and the authors of its bundled libraries\nLicense: Node.js\n${indented}\n`
  );
}
