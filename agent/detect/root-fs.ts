import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { dirname, join, posix } from 'node:path';
import type { Evidence } from '../../lib/capabilities.js';

// Every probe reads through this module so that (a) nothing outside the root is ever touched, (b) a fixture's
// present.txt stands in for device nodes and libraries that cannot be created in a tree, and (c) tests can inject
// failures (EACCES as a non-root user on a board) that running as root in CI would never produce.

/** The raw file operations; absolute paths on this machine. Inject to simulate errors. */
export interface FileAccess {
  readFile(path: string): Buffer | string;
  exists(path: string): boolean;
  readdir(path: string): string[];
}

export type ReadResult =
  | { ok: true; path: string; text: string; evidence: Evidence }
  | { ok: false; path: string; evidence: Evidence };

export interface RootFs {
  root: string;
  /** The device-node/library list when the root is a fixture; null on a real board. */
  present: ReadonlySet<string> | null;
  /** Read a board path (e.g. `/proc/cpuinfo`) as text; failures become evidence, never exceptions. */
  read(boardPath: string): ReadResult;
  readBytes(boardPath: string): { ok: true; bytes: Buffer } | { ok: false; evidence: Evidence };
  /** Whether a device node or library exists, and the evidence saying so. */
  node(boardPath: string): Evidence & { kind: 'node' };
  /** Names in a board directory; for /dev and library dirs in a fixture, taken from present.txt. */
  list(boardDir: string): string[];
}

const OUTSIDE = Symbol('outside the root');

/** Files above this size are not something a probe should parse; cpuinfo on 256 cores is ~500 KiB. */
const MAX_TEXT_BYTES = 4 * 1024 * 1024;

function errorWord(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
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

export const nodeFileAccess: FileAccess = {
  readFile: (path) => readFileSync(path),
  exists: (path) => existsSync(path),
  readdir: (path) => readdirSync(path),
};

/** Parse a fixture's present.txt: one absolute path per line, `#` comments and blanks ignored. */
export function parsePresentList(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('/'));
}

export interface RootFsOptions {
  root: string;
  presentPaths?: readonly string[] | undefined;
  access?: Partial<FileAccess> | undefined;
}

type DirState = 'inside' | 'outside' | 'missing';

/**
 * Keeps reads inside the root. A fixture tree may hold absolute symlinks (as /proc/device-tree is on a board);
 * following them would read the host's files, so reads that resolve outside the root are refused. Each directory
 * below the root is checked once per run, component by component from the root down: a plain directory costs
 * one lstat, only a symlink pays for a realpath.
 */
class RootConfinement {
  readonly #realRoot: string | null;
  readonly #rootPrefix: string;
  readonly #dirStates = new Map<string, DirState>();

  constructor(root: string) {
    let realRoot: string | null;
    try {
      realRoot = realpathSync.native(root);
    } catch {
      realRoot = null;
    }
    this.#realRoot = realRoot;
    this.#rootPrefix = root.endsWith('/') ? root.slice(0, -1) : root;
  }

  inside(real: string): boolean {
    const r = this.#realRoot;
    return r !== null && (real === r || real.startsWith(r.endsWith('/') ? r : `${r}/`));
  }

  dirState(dir: string): DirState {
    if (this.#realRoot === null) return 'missing';
    let current = this.#rootPrefix;
    for (const part of dir.slice(this.#rootPrefix.length).split('/')) {
      if (!part) continue;
      current = `${current}/${part}`;
      const state = this.#componentState(current);
      if (state !== 'inside') return state;
    }
    return 'inside';
  }

  /** O_NOFOLLOW makes the common case (a plain file) one open; only a symlink (ELOOP) pays for a realpath. */
  read(full: string): Buffer | typeof OUTSIDE {
    let fd: number;
    try {
      fd = openSync(full, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOOP') throw err;
      if (!this.inside(realpathSync.native(full))) return OUTSIDE;
      return readFileSync(full);
    }
    try {
      return readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  #componentState(path: string): DirState {
    let state = this.#dirStates.get(path);
    if (state === undefined) {
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (!st) state = 'missing';
      else if (st.isSymbolicLink()) {
        try {
          const real = realpathSync.native(path);
          state = !this.inside(real) ? 'outside' : statSync(real).isDirectory() ? 'inside' : 'missing';
        } catch {
          state = 'missing';
        }
      } else state = st.isDirectory() ? 'inside' : 'missing';
      this.#dirStates.set(path, state);
    }
    return state;
  }
}

type BytesResult = { ok: true; bytes: Buffer } | { ok: false; evidence: Evidence };

const outsideRoot = (path: string): BytesResult => ({
  ok: false,
  evidence: { kind: 'unreadable', path, error: 'resolves outside the root' },
});
const missingFile = (path: string): BytesResult => ({ ok: false, evidence: { kind: 'missing', path } });

/** Whether a path or anything below it is listed in present.txt. */
function listedPresent(present: ReadonlySet<string>, boardPath: string): boolean {
  if (present.has(boardPath)) return true;
  const prefix = boardPath.endsWith('/') ? boardPath : `${boardPath}/`;
  for (const p of present) if (p.startsWith(prefix)) return true;
  return false;
}

/** The names directly below a directory, as present.txt lists them. */
function listedNames(present: ReadonlySet<string>, boardDir: string): string[] {
  const prefix = boardDir.endsWith('/') ? boardDir : `${boardDir}/`;
  const names = new Set<string>();
  for (const p of present) {
    if (!p.startsWith(prefix)) continue;
    const name = p.slice(prefix.length).split('/')[0];
    if (name) names.add(name);
  }
  return [...names].sort();
}

export function createRootFs(options: RootFsOptions): RootFs {
  const root = options.root;
  const access: FileAccess = { ...nodeFileAccess, ...options.access };
  // With the real file system we can look before reading: a stat is far cheaper than a thrown ENOENT, and the
  // confinement check needs it anyway. An injected reader is trusted to be the whole file system.
  const confinement = options.access?.readFile === undefined ? new RootConfinement(root) : undefined;
  const hostPath = (boardPath: string): string => join(root, posix.normalize(`/${boardPath}`));

  const readBytes = (boardPath: string): BytesResult => {
    const full = hostPath(boardPath);
    try {
      let data: Buffer | string;
      if (confinement) {
        const state = confinement.dirState(dirname(full));
        if (state === 'missing') return missingFile(boardPath);
        if (state === 'outside') return outsideRoot(boardPath);
        const confined = confinement.read(full);
        if (confined === OUTSIDE) return outsideRoot(boardPath);
        data = confined;
      } else data = access.readFile(full);
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
      if (bytes.length > MAX_TEXT_BYTES)
        return {
          ok: false,
          evidence: { kind: 'unreadable', path: boardPath, error: `larger than ${MAX_TEXT_BYTES} bytes` },
        };
      return { ok: true, bytes };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return missingFile(boardPath);
      return { ok: false, evidence: { kind: 'unreadable', path: boardPath, error: errorWord(err) } };
    }
  };

  let present: Set<string> | null = null;
  if (options.presentPaths) present = new Set(options.presentPaths);
  else if (root !== '/') {
    // Only a fixture tree carries present.txt; on a board a stray /present.txt must not hide real nodes.
    const list = readBytes('/present.txt');
    if (list.ok) present = new Set(parsePresentList(list.bytes.toString('utf8')));
  }

  const isPresent = (boardPath: string): boolean => {
    if (present) return listedPresent(present, boardPath);
    try {
      return access.exists(hostPath(boardPath));
    } catch {
      return false;
    }
  };

  return {
    root,
    present,
    readBytes,
    read(boardPath) {
      const r = readBytes(boardPath);
      if (!r.ok) return { ok: false, path: boardPath, evidence: r.evidence };
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
        return listedNames(present, boardDir);
      try {
        if (confinement && confinement.dirState(hostPath(boardDir)) !== 'inside') return [];
        return access.readdir(hostPath(boardDir)).sort();
      } catch {
        return [];
      }
    },
  };
}

/** Printable-ASCII check: binary junk must not become a board name. */
export function isPrintable(s: string): boolean {
  return s.length > 0 && /^[\x20-\x7e]+$/.test(s);
}
