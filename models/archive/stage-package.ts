import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  createReadStream,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  realpathSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fsyncDir } from '../../agent/common/durable-fs.js';
import { resolveLinkTarget, safePackagePath } from './package-path.js';
import { archiveError, readTar, tarChunksFromFile } from './tar-reader.js';

// Brings a package (a tar/tar.gz or a directory) into a private staging directory, hashing every byte on
// the way and refusing anything unsafe. The caller verifies the hashes against the manifest and moves the
// staging directory into place; nothing here touches the live store.

export interface StageLimits {
  /** Largest single file. */
  maxEntryBytes: number;
  /** Largest package (sum of files). */
  maxTotalBytes: number;
  maxEntries: number;
}

export const DEFAULT_STAGE_LIMITS: StageLimits = {
  maxEntryBytes: 32 * 1024 ** 3,
  maxTotalBytes: 64 * 1024 ** 3,
  maxEntries: 10_000,
};

export interface StagedFile {
  path: string;
  length: number;
  sha256: string;
}

export interface StageProgress {
  file: string;
  bytesDone: number;
  /** Known for directories (sum of file sizes); for archives the compressed size is all there is. */
  bytesTotal?: number;
}

export interface StageOptions {
  limits?: Partial<StageLimits>;
  onProgress?: (p: StageProgress) => void;
  /** Called after each file is written; lets a caller pace or observe the import. */
  afterFile?: (path: string) => Promise<void> | void;
  signal?: AbortSignal;
  /** The source directory is the caller's own scratch space (a finished hub download): its files are renamed
   *  into staging, not copied. Falls back to copying across filesystems. */
  consumeSource?: ConsumeSource;
}

export interface ConsumeSource {
  /** sha256 the caller computed over exactly these bytes as it wrote (and fsynced) them; a file listed here is
   *  not read again. Anything else is hashed where it lands. */
  sha256: ReadonlyMap<string, string>;
}

/** Moves a file into staging and hashes it there; false when it lives on another filesystem. */
async function moveAndHash(
  from: string,
  to: string,
  known: string | undefined,
  onChunk: (n: number) => void,
): Promise<StagedFile | false> {
  mkdirSync(dirname(to), { recursive: true });
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as { code?: string }).code === 'EXDEV') return false;
    throw err;
  }
  if (known !== undefined) {
    const length = lstatSync(to).size;
    onChunk(length);
    return { path: '', length, sha256: known };
  }
  const hash = createHash('sha256');
  let length = 0;
  for await (const chunk of createReadStream(to, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    length += chunk.length;
    onChunk(chunk.length);
  }
  // The bytes may still be only in the page cache: the staged tree is published by rename, never torn.
  const fd = openSync(to, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return { path: '', length, sha256: hash.digest('hex') };
}

class FileSink {
  readonly #fd: number;
  readonly #hash = createHash('sha256');
  length = 0;
  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.#fd = openSync(path, 'wx', 0o644);
  }
  write(chunk: Uint8Array): void {
    this.#hash.update(chunk);
    let off = 0;
    while (off < chunk.length) off += writeSync(this.#fd, chunk, off);
    this.length += chunk.length;
  }
  /** fsync before the staging directory can be renamed into place: a rename must never publish torn data. */
  finish(): string {
    fsyncSync(this.#fd);
    closeSync(this.#fd);
    return this.#hash.digest('hex');
  }
  abort(): void {
    closeSync(this.#fd);
  }
}

/** A file whose path runs through another file ("a" then "a/b") is a malformed package, not an I/O error. */
function openSink(staging: string, path: string, shown: string): FileSink {
  try {
    return new FileSink(join(staging, path));
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOTDIR' || code === 'EEXIST' || code === 'EISDIR')
      throw archiveError(`entry ${shown} collides with another entry's path`, path);
    throw err;
  }
}

function fsyncTree(root: string): void {
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name));
    fsyncDir(d);
  };
  walk(root);
}

export async function stageFromTar(
  archive: string,
  staging: string,
  options: StageOptions = {},
): Promise<StagedFile[]> {
  const limits = { ...DEFAULT_STAGE_LIMITS, ...options.limits };
  const files = new Map<string, StagedFile>();
  const seen = new Set<string>();
  const links: { path: string; target: string; kind: 'symlink' | 'hardlink' }[] = [];
  let total = 0;
  let count = 0;
  for await (const entry of readTar(tarChunksFromFile(archive))) {
    options.signal?.throwIfAborted();
    if (++count > limits.maxEntries)
      throw archiveError(`archive has more than ${limits.maxEntries} entries`, entry.path);
    const path = safePackagePath(entry.path);
    const shown = JSON.stringify(entry.path);
    if (entry.type === 'directory') continue;
    if (seen.has(path)) throw archiveError(`entry ${shown} appears twice in the archive`, entry.path);
    seen.add(path);
    switch (entry.type) {
      case 'symlink':
      case 'hardlink':
        links.push({
          path,
          target: resolveLinkTarget(path, entry.linkTarget ?? '', entry.type),
          kind: entry.type,
        });
        continue;
      case 'char-device':
      case 'block-device':
      case 'fifo':
        throw archiveError(`entry ${shown} is a ${entry.type}, which a package must not contain`, entry.path);
      default:
        break;
    }
    if (entry.size > limits.maxEntryBytes)
      throw archiveError(
        `entry ${shown} is ${entry.size} bytes, over the limit of ${limits.maxEntryBytes}`,
        entry.path,
      );
    total += entry.size;
    if (total > limits.maxTotalBytes)
      throw archiveError(
        `archive exceeds the package limit of ${limits.maxTotalBytes} bytes at entry ${shown}`,
        entry.path,
      );
    const sink = openSink(staging, path, shown);
    try {
      for await (const chunk of entry.body()) {
        sink.write(chunk);
        options.onProgress?.({ file: path, bytesDone: total - entry.size + sink.length });
      }
    } catch (err) {
      sink.abort();
      throw err;
    }
    files.set(path, { path, length: sink.length, sha256: sink.finish() });
    await options.afterFile?.(path);
  }
  // Links inside the package become plain copies: the store holds regular files only, so nothing in it can
  // later be re-pointed outside.
  for (const link of links) {
    let target = files.get(link.target);
    for (let hops = 0; !target && hops < 40; hops++) {
      const next = links.find((l) => l.path === link.target);
      if (!next) break;
      link.target = next.target;
      target = files.get(link.target);
    }
    if (!target)
      throw archiveError(
        `${link.kind} ${JSON.stringify(link.path)} points to ${JSON.stringify(link.target)}, which is not a file in the package`,
        link.path,
      );
    mkdirSync(dirname(join(staging, link.path)), { recursive: true });
    copyFileSync(join(staging, link.target), join(staging, link.path));
    files.set(link.path, { ...target, path: link.path });
  }
  fsyncTree(staging);
  return [...files.values()];
}

/** Lists a source directory's files; a symlink is followed only when it stays inside the directory. */
export function listPackageDir(root: string): string[] {
  const realRoot = realpathSync(root);
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const abs = join(dir, name);
      const rel = relative(root, abs).split(sep).join('/');
      const st = lstatSync(abs);
      if (st.isSymbolicLink()) {
        const real = realpathSync(abs);
        if (real !== realRoot && !real.startsWith(realRoot + sep))
          throw archiveError(`symlink ${JSON.stringify(rel)} points outside the package (${real})`, rel);
        if (lstatSync(real).isDirectory()) walk(abs);
        else out.push(rel);
      } else if (st.isDirectory()) walk(abs);
      else if (st.isFile()) out.push(rel);
      else
        throw archiveError(
          `entry ${JSON.stringify(rel)} is not a regular file, which a package must not contain`,
          rel,
        );
    }
  };
  walk(root);
  return out;
}

export async function stageFromDir(
  source: string,
  staging: string,
  options: StageOptions = {},
): Promise<StagedFile[]> {
  const limits = { ...DEFAULT_STAGE_LIMITS, ...options.limits };
  const paths = listPackageDir(source);
  if (paths.length > limits.maxEntries)
    throw archiveError(`directory has more than ${limits.maxEntries} files`);
  const sizes = paths.map((p) => lstatSync(realpathSync(join(source, p))).size);
  const bytesTotal = sizes.reduce((a, b) => a + b, 0);
  for (const [i, p] of paths.entries())
    if (sizes[i]! > limits.maxEntryBytes)
      throw archiveError(
        `entry ${JSON.stringify(p)} is ${sizes[i]} bytes, over the limit of ${limits.maxEntryBytes}`,
        p,
      );
  if (bytesTotal > limits.maxTotalBytes)
    throw archiveError(
      `directory holds ${bytesTotal} bytes, over the package limit of ${limits.maxTotalBytes}`,
    );
  const out: StagedFile[] = [];
  let done = 0;
  for (const path of paths) {
    options.signal?.throwIfAborted();
    if (options.consumeSource && !lstatSync(join(source, path)).isSymbolicLink()) {
      const known = options.consumeSource.sha256.get(path);
      const moved = await moveAndHash(join(source, path), join(staging, path), known, (n) => {
        done += n;
        options.onProgress?.({ file: path, bytesDone: done, bytesTotal });
      });
      if (moved) {
        out.push({ ...moved, path });
        await options.afterFile?.(path);
        continue;
      }
    }
    const sink = new FileSink(join(staging, path));
    try {
      for await (const chunk of createReadStream(join(source, path), {
        highWaterMark: 1024 * 1024,
      }) as AsyncIterable<Buffer>) {
        sink.write(chunk);
        done += chunk.length;
        options.onProgress?.({ file: path, bytesDone: done, bytesTotal });
      }
    } catch (err) {
      sink.abort();
      throw err;
    }
    out.push({ path, length: sink.length, sha256: sink.finish() });
    await options.afterFile?.(path);
  }
  fsyncTree(staging);
  return out;
}
