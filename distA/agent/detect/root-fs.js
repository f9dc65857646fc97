import { closeSync, constants, existsSync, lstatSync, openSync, readdirSync, readFileSync, realpathSync, statSync, } from 'node:fs';
import { dirname, join, posix } from 'node:path';
const OUTSIDE = Symbol('outside the root');
/** Files above this size are not something a probe should parse; cpuinfo on 256 cores is ~500 KiB. */
const MAX_TEXT_BYTES = 4 * 1024 * 1024;
function errorWord(err) {
    const code = err?.code;
    switch (code) {
        case 'EACCES':
        case 'EPERM':
            return 'permission denied';
        case 'EISDIR':
            return 'is a directory';
        case 'EIO':
            return 'I/O error';
        case 'EINVAL':
            return 'not readable as a file';
        case 'ELOOP':
            return 'symlink loop';
        default:
            return code ? code.toLowerCase() : err instanceof Error ? err.message : String(err);
    }
}
export const nodeFileAccess = {
    readFile: (path) => readFileSync(path),
    exists: (path) => existsSync(path),
    readdir: (path) => readdirSync(path),
};
/** Parse a fixture's present.txt: one absolute path per line, `#` comments and blanks ignored. */
export function parsePresentList(text) {
    return text
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l.startsWith('/'));
}
export function createRootFs(options) {
    const root = options.root;
    const access = { ...nodeFileAccess, ...options.access };
    // With the real file system we can look before reading: a stat is far cheaper than a thrown ENOENT, and the
    // confinement check needs it anyway. An injected reader is trusted to be the whole file system.
    const realFs = options.access?.readFile === undefined;
    const hostPath = (boardPath) => join(root, posix.normalize(`/${boardPath}`));
    // A fixture tree may hold absolute symlinks (as /proc/device-tree is on a board); following them would read
    // the host's files, so reads that resolve outside the root are refused. Directories are resolved once per run.
    let realRoot = null;
    if (realFs) {
        try {
            realRoot = realpathSync.native(root);
        }
        catch {
            realRoot = null;
        }
    }
    const inside = (real) => realRoot !== null &&
        (real === realRoot || real.startsWith(realRoot.endsWith('/') ? realRoot : `${realRoot}/`));
    // Each directory below the root is checked once per run, component by component from the root down: a
    // plain directory costs one lstat, only a symlink pays for a realpath.
    const dirStates = new Map();
    const rootPrefix = root.endsWith('/') ? root.slice(0, -1) : root;
    const componentState = (path) => {
        let state = dirStates.get(path);
        if (state === undefined) {
            const st = lstatSync(path, { throwIfNoEntry: false });
            if (!st)
                state = 'missing';
            else if (st.isSymbolicLink()) {
                try {
                    const real = realpathSync.native(path);
                    state = !inside(real) ? 'outside' : statSync(real).isDirectory() ? 'inside' : 'missing';
                }
                catch {
                    state = 'missing';
                }
            }
            else
                state = st.isDirectory() ? 'inside' : 'missing';
            dirStates.set(path, state);
        }
        return state;
    };
    const dirState = (dir) => {
        if (realRoot === null)
            return 'missing';
        let current = rootPrefix;
        for (const part of dir.slice(rootPrefix.length).split('/')) {
            if (!part)
                continue;
            current = `${current}/${part}`;
            const state = componentState(current);
            if (state !== 'inside')
                return state;
        }
        return 'inside';
    };
    // O_NOFOLLOW makes the common case (a plain file) one open; only a symlink (ELOOP) pays for a realpath.
    const readConfined = (full) => {
        let fd;
        try {
            fd = openSync(full, constants.O_RDONLY | constants.O_NOFOLLOW);
        }
        catch (err) {
            if (err.code !== 'ELOOP')
                throw err;
            if (!inside(realpathSync.native(full)))
                return OUTSIDE;
            return readFileSync(full);
        }
        try {
            return readFileSync(fd);
        }
        finally {
            closeSync(fd);
        }
    };
    const outside = (boardPath) => ({
        ok: false,
        evidence: { kind: 'unreadable', path: boardPath, error: 'resolves outside the root' },
    });
    const missing = (boardPath) => ({
        ok: false,
        evidence: { kind: 'missing', path: boardPath },
    });
    const readBytes = (boardPath) => {
        const full = hostPath(boardPath);
        try {
            let data;
            if (realFs) {
                const state = dirState(dirname(full));
                if (state === 'missing')
                    return missing(boardPath);
                if (state === 'outside')
                    return outside(boardPath);
                const confined = readConfined(full);
                if (confined === OUTSIDE)
                    return outside(boardPath);
                data = confined;
            }
            else
                data = access.readFile(full);
            const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
            if (bytes.length > MAX_TEXT_BYTES)
                return {
                    ok: false,
                    evidence: { kind: 'unreadable', path: boardPath, error: `larger than ${MAX_TEXT_BYTES} bytes` },
                };
            return { ok: true, bytes };
        }
        catch (err) {
            const code = err.code;
            if (code === 'ENOENT' || code === 'ENOTDIR')
                return missing(boardPath);
            return { ok: false, evidence: { kind: 'unreadable', path: boardPath, error: errorWord(err) } };
        }
    };
    let present = null;
    if (options.presentPaths)
        present = new Set(options.presentPaths);
    else if (root !== '/') {
        // Only a fixture tree carries present.txt; on a board a stray /present.txt must not hide real nodes.
        const list = readBytes('/present.txt');
        if (list.ok)
            present = new Set(parsePresentList(list.bytes.toString('utf8')));
    }
    const isPresent = (boardPath) => {
        if (!present) {
            try {
                return access.exists(hostPath(boardPath));
            }
            catch {
                return false;
            }
        }
        if (present.has(boardPath))
            return true;
        const prefix = boardPath.endsWith('/') ? boardPath : `${boardPath}/`;
        for (const p of present)
            if (p.startsWith(prefix))
                return true;
        return false;
    };
    const presentNames = (boardDir) => {
        const prefix = boardDir.endsWith('/') ? boardDir : `${boardDir}/`;
        const names = new Set();
        for (const p of present ?? []) {
            if (!p.startsWith(prefix))
                continue;
            const rest = p.slice(prefix.length);
            const name = rest.split('/')[0];
            if (name)
                names.add(name);
        }
        return [...names].sort();
    };
    return {
        root,
        present,
        readBytes,
        read(boardPath) {
            const r = readBytes(boardPath);
            if (!r.ok)
                return { ok: false, path: boardPath, evidence: r.evidence };
            const text = r.bytes.toString('utf8');
            return {
                ok: true,
                path: boardPath,
                text,
                evidence: { kind: 'file', path: boardPath, value: text.trim() },
            };
        },
        node(boardPath) {
            return {
                kind: 'node',
                path: boardPath,
                present: isPresent(boardPath),
                via: present ? 'present.txt' : 'stat',
            };
        },
        list(boardDir) {
            // present.txt speaks for device nodes and libraries; sysfs and procfs are real directories in a fixture.
            if (present && !boardDir.startsWith('/sys') && !boardDir.startsWith('/proc'))
                return presentNames(boardDir);
            try {
                if (realFs && dirState(hostPath(boardDir)) !== 'inside')
                    return [];
                return access.readdir(hostPath(boardDir)).sort();
            }
            catch {
                return [];
            }
        },
    };
}
/** Printable-ASCII check: binary junk must not become a board name. */
export function isPrintable(s) {
    return s.length > 0 && /^[\x20-\x7e]+$/.test(s);
}
//# sourceMappingURL=root-fs.js.map