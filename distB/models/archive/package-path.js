import { posix } from 'node:path';
import { archiveError } from './tar-reader.js';
// A path inside a package as archives and manifests spell it. Everything that could land outside the
// package directory, or mean different files on different systems, is refused with the entry's name.
export function safePackagePath(raw) {
    const shown = JSON.stringify(raw);
    if (raw.includes('\0'))
        throw archiveError(`entry ${shown} has a NUL byte in its path`, raw);
    if (raw.includes('\\'))
        throw archiveError(`entry ${shown} has a backslash in its path`, raw);
    if (raw.startsWith('/'))
        throw archiveError(`entry ${shown} has an absolute path`, raw);
    const parts = raw.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.includes('..'))
        throw archiveError(`entry ${shown} has a path that leaves the package (..)`, raw);
    if (parts.length === 0)
        throw archiveError(`entry ${shown} has an empty path`, raw);
    return parts.join('/');
}
/** Where a link in the package points, as a package path; refuses targets outside the package. */
export function resolveLinkTarget(entryPath, target, kind) {
    const shown = JSON.stringify(entryPath);
    if (target === '' || target.startsWith('/'))
        throw archiveError(`${kind} ${shown} points outside the package (${JSON.stringify(target)})`, entryPath);
    // Symlink targets are relative to the link's directory; hardlink targets name an archive member.
    const base = kind === 'symlink' ? posix.dirname(entryPath) : '.';
    const joined = posix.normalize(posix.join(base, target));
    if (joined === '..' || joined.startsWith('../') || joined === '.')
        throw archiveError(`${kind} ${shown} points outside the package (${JSON.stringify(target)})`, entryPath);
    return joined;
}
//# sourceMappingURL=package-path.js.map