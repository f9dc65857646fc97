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
  statfsSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fsyncDir } from '../../lib/durable-fs.js';
import { MnnEdgeError } from '../../lib/errors.js';
import { INPUT_LIMITS } from '../../lib/input-limits.js';
import { parseManifestBytes } from '../manifest/parse-bytes.js';
import { packageFiles } from '../manifest/schema.js';
import { MANIFEST_FILE } from '../manifest/types.js';
import { resolveLinkTarget, safePackagePath } from './package-path.js';
import { BLOCK } from './tar-format.js';
import { archiveError, type DecompressionBudget, readTar, tarChunksFromFile } from './tar-reader.js';

// Brings a package (a tar/tar.gz or a directory) into a private staging directory, hashing every byte on
// the way and refusing anything unsafe. The caller verifies the hashes against the manifest and moves the
// staging directory into place; nothing here touches the live store.

export interface StageLimits {
  /** Largest single file. */
  maxEntryBytes: number;
  /** Largest package (sum of files). */
  maxTotalBytes: number;
  maxEntries: number;
  /** Largest ratio of unpacked tar bytes to the compressed file's size (gzip only). */
  maxCompressionRatio: number;
}

// Sized for boards, not servers: an 8 GiB package already fills most eMMC parts, and the largest models an
// edge board runs (7B at 4 bits) stay under it. Model weights barely compress, so a ratio of 20 leaves text
// files plenty of room while a gzip of zeros (ratio ~1000) is refused.
export const DEFAULT_STAGE_LIMITS: StageLimits = {
  maxEntryBytes: 8 * 1024 ** 3,
  maxTotalBytes: 8 * 1024 ** 3,
  maxEntries: 10_000,
  maxCompressionRatio: 20,
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
  /**
   * Archives only: refuse a package whose first file entry is not its manifest. Packages that arrive over the
   * network must be checkable entry by entry before anything is written (ota pack puts the manifest first).
   */
  manifestFirst?: boolean;
  /** Free bytes in a directory (for the disk-space check against the manifest); statfs by default. */
  freeBytes?: (dir: string) => number;
  /** Space that must stay free after the package is unpacked. */
  headroomBytes?: number;
  /** The source directory is the caller's own scratch space (a finished hub download): its files are renamed
   *  into staging, not copied. Falls back to copying across filesystems. */
  consumeSource?: ConsumeSource;
}

/** What the manifest at the head of an archive says will follow: checked before each entry is written. */
interface ArchivePlan {
  files: Map<string, number>;
  totalBytes: number;
}

function freeBytesIn(dir: string): number {
  const s = statfsSync(dir);
  return Number(s.bavail) * Number(s.bsize);
}

/**
 * Tar bytes the planned files can take: per file its padded data plus headers (a pax record for a long name
 * included), and a fixed slack for the end-of-archive record padding and the decompressor's read-ahead.
 */
function tarBytesFor(plan: ArchivePlan): number {
  let n = 1024 * 1024;
  for (const length of plan.files.values()) n += 8 * 1024 + Math.ceil(length / BLOCK) * BLOCK;
  return n;
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

interface PackageLink {
  path: string;
  target: string;
  kind: 'symlink' | 'hardlink';
}

/** Links inside the package become plain copies: the store holds regular files only, so nothing in it can later
 *  be re-pointed outside. A link to a link is followed (at most 40 hops). */
function copyLinks(staging: string, links: PackageLink[], files: Map<string, StagedFile>): void {
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
}

export async function stageFromTar(
  archive: string,
  staging: string,
  options: StageOptions = {},
): Promise<StagedFile[]> {
  const limits = { ...DEFAULT_STAGE_LIMITS, ...options.limits };
  const compressedBytes = statSync(archive).size;
  // Until the manifest is known, the unpacked stream is bounded by the ratio and by the package limit.
  const budget: DecompressionBudget = {
    maxBytes: Math.min(
      compressedBytes * limits.maxCompressionRatio,
      limits.maxTotalBytes + limits.maxEntries * 8 * 1024 + 1024 * 1024,
    ),
    why: `more than ${limits.maxCompressionRatio} times its compressed size (models.maxCompressionRatio)`,
    position: 0,
    compressed: false,
  };
  const files = new Map<string, StagedFile>();
  const seen = new Set<string>();
  const links: PackageLink[] = [];
  let plan: ArchivePlan | undefined;
  let total = 0;
  let count = 0;
  let firstFile = true;
  for await (const entry of readTar(tarChunksFromFile(archive, budget))) {
    options.signal?.throwIfAborted();
    if (++count > limits.maxEntries)
      throw archiveError(`archive has more than ${limits.maxEntries} entries`, entry.path);
    const path = safePackagePath(entry.path);
    const shown = JSON.stringify(entry.path);
    if (entry.type === 'directory') continue;
    if (seen.has(path)) throw archiveError(`entry ${shown} appears twice in the archive`, entry.path);
    seen.add(path);
    const isFirst = firstFile;
    firstFile = false;
    if (isFirst && options.manifestFirst && (path !== MANIFEST_FILE || entry.type !== 'file'))
      throw archiveError(
        `the package must start with its manifest ${MANIFEST_FILE} (ota pack writes it first); the first entry is ${shown}`,
        entry.path,
      );
    if (plan && path !== MANIFEST_FILE && !plan.files.has(path))
      throw new MnnEdgeError('EVERIFY', `File ${path} is not listed in the manifest`, { entry: path });
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
    // The size the header declares is what the reader will deliver: compared with the manifest before a byte
    // of it is written, so a bomb that lies about one file never reaches the disk.
    const planned = plan?.files.get(path);
    if (planned !== undefined && planned !== entry.size)
      throw new MnnEdgeError(
        'EVERIFY',
        `File ${path} is ${entry.size} bytes but the manifest says ${planned}`,
        {
          entry: path,
        },
      );
    total += entry.size;
    if (total > limits.maxTotalBytes)
      throw archiveError(
        `archive exceeds the package limit of ${limits.maxTotalBytes} bytes at entry ${shown}`,
        entry.path,
      );
    if (isFirst && path === MANIFEST_FILE && entry.type === 'file') {
      const bytes = await readManifestEntry(entry.size, entry.body());
      plan = planFrom(bytes, compressedBytes, budget, limits, staging, options);
      const sink = openSink(staging, path, shown);
      sink.write(bytes);
      files.set(path, { path, length: sink.length, sha256: sink.finish() });
      await options.afterFile?.(path);
      continue;
    }
    const sink = openSink(staging, path, shown);
    try {
      for await (const chunk of entry.body()) {
        sink.write(chunk);
        options.onProgress?.({
          file: path,
          bytesDone: total - entry.size + sink.length,
          ...(plan ? { bytesTotal: plan.totalBytes } : {}),
        });
      }
    } catch (err) {
      sink.abort();
      throw err;
    }
    files.set(path, { path, length: sink.length, sha256: sink.finish() });
    await options.afterFile?.(path);
  }
  copyLinks(staging, links, files);
  fsyncTree(staging);
  return [...files.values()];
}

async function readManifestEntry(size: number, body: AsyncIterable<Buffer>): Promise<Buffer> {
  if (size > INPUT_LIMITS.manifestMaxBytes)
    throw new MnnEdgeError(
      'EMANIFEST',
      `Invalid manifest ${MANIFEST_FILE}: ${size} bytes, over the limit of ${INPUT_LIMITS.manifestMaxBytes}`,
    );
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * The manifest at the head of an archive, turned into the checks for the rest: every file's size, the
 * package total against the limits and the free space, the expansion against the compressed size, and a
 * tighter bound on the unpacked stream.
 */
function planFrom(
  bytes: Buffer,
  compressedBytes: number,
  budget: DecompressionBudget,
  limits: StageLimits,
  staging: string,
  options: StageOptions,
): ArchivePlan {
  const manifest = parseManifestBytes(bytes, MANIFEST_FILE);
  const files = new Map<string, number>();
  let totalBytes = 0;
  for (const [path, f] of packageFiles(manifest)) {
    if (f.length > limits.maxEntryBytes)
      throw archiveError(
        `manifest lists ${path} at ${f.length} bytes, over the limit of ${limits.maxEntryBytes}`,
        path,
      );
    files.set(path, f.length);
    totalBytes += f.length;
  }
  if (totalBytes > limits.maxTotalBytes)
    throw archiveError(
      `manifest lists ${totalBytes} bytes of files, over the package limit of ${limits.maxTotalBytes} bytes (models.maxPackageBytes)`,
    );
  const plan = { files, totalBytes };
  const tarBytes = tarBytesFor(plan);
  if (budget.compressed === true) {
    if (totalBytes > compressedBytes * limits.maxCompressionRatio)
      throw archiveError(
        `package would unpack to ${totalBytes} bytes, more than ${limits.maxCompressionRatio} times its ${compressedBytes} compressed bytes (models.maxCompressionRatio)`,
      );
  }
  budget.maxBytes = Math.min(budget.maxBytes, budget.position + tarBytes);
  budget.why = `more than its manifest lists (${totalBytes} bytes of files)`;
  const free = (options.freeBytes ?? freeBytesIn)(staging);
  const needed = totalBytes + (options.headroomBytes ?? 0);
  if (free < needed)
    throw new MnnEdgeError(
      'ENOSPC',
      `Not enough disk space in ${staging} for the package: its manifest lists ${totalBytes} bytes${options.headroomBytes ? ` (+ ${options.headroomBytes} headroom)` : ''}, ${free} free`,
      { required: needed, free },
    );
  return plan;
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
