import { closeSync, createReadStream, openSync, readSync } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { MnnEdgeError } from '../../lib/errors.js';
import { ByteSource } from './byte-source.js';
import {
  BLOCK,
  entryTypeOfFlag,
  GNU_LONG_LINK,
  GNU_LONG_NAME,
  headerChecksum,
  PAX_GLOBAL,
  PAX_LOCAL,
  paddingFor,
  type TarEntryType,
} from './tar-format.js';

// A streaming tar reader (ustar, pax, GNU long names; gzip via node:zlib). It only parses: deciding which
// entries are safe to write to disk is safe-extract.ts's job. Every error names the entry it was reading.

export interface TarEntry {
  path: string;
  type: TarEntryType;
  size: number;
  mode: number;
  /** Seconds since the epoch. */
  mtime: number;
  /** Target of a symlink or hardlink. */
  linkTarget?: string;
  /** The entry's data, streamed; must be consumed (or left alone) before asking for the next entry. */
  body(): AsyncIterable<Buffer>;
}

export interface ReadTarOptions {
  /** Upper bound for pax and GNU long-name meta entries, which are held in memory. */
  maxMetaBytes?: number;
}

export function archiveError(message: string, entry?: string): MnnEdgeError {
  return new MnnEdgeError('EARCHIVE', message, entry === undefined ? undefined : { entry });
}

function cString(buf: Buffer, start: number, length: number): string {
  const field = buf.subarray(start, start + length);
  const nul = field.indexOf(0);
  return field.subarray(0, nul === -1 ? field.length : nul).toString('utf8');
}

function parseNumber(buf: Buffer, start: number, length: number, field: string, entry: string): number {
  const raw = buf.subarray(start, start + length);
  if ((raw[0]! & 0x80) !== 0) {
    // GNU base-256: big-endian two's complement with the top bit as marker; only non-negative sizes make sense.
    if ((raw[0]! & 0x40) !== 0) throw archiveError(`negative ${field} in tar header of ${entry}`, entry);
    let value = BigInt(raw[0]! & 0x3f);
    for (let i = 1; i < raw.length; i++) value = (value << 8n) | BigInt(raw[i]!);
    if (value > BigInt(Number.MAX_SAFE_INTEGER))
      throw archiveError(`${field} too large in tar header of ${entry}`, entry);
    return Number(value);
  }
  const text = raw
    .toString('latin1')
    .replace(/[\0 ]+$/, '')
    .trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text))
    throw archiveError(`invalid ${field} ${JSON.stringify(text)} in tar header of ${entry}`, entry);
  const value = Number.parseInt(text, 8);
  if (!Number.isSafeInteger(value)) throw archiveError(`${field} too large in tar header of ${entry}`, entry);
  return value;
}

function parsePax(data: Buffer, entry: string): Map<string, string> {
  const out = new Map<string, string>();
  let pos = 0;
  while (pos < data.length) {
    const space = data.indexOf(0x20, pos);
    const len = space === -1 ? Number.NaN : Number(data.subarray(pos, space).toString('latin1'));
    if (!Number.isInteger(len) || len <= 0 || pos + len > data.length)
      throw archiveError(`malformed pax header record at byte ${pos} before ${entry}`, entry);
    const record = data.subarray(space + 1, pos + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq <= 0) throw archiveError(`malformed pax header record at byte ${pos} before ${entry}`, entry);
    out.set(record.slice(0, eq), record.slice(eq + 1));
    pos += len;
  }
  return out;
}

function isZeroBlock(block: Buffer): boolean {
  for (const b of block) if (b !== 0) return false;
  return true;
}

export async function* readTar(
  chunks: AsyncIterable<Uint8Array>,
  options: ReadTarOptions = {},
): AsyncGenerator<TarEntry> {
  const maxMeta = options.maxMetaBytes ?? 1024 * 1024;
  const src = new ByteSource(chunks);
  let pax = new Map<string, string>();
  const globalPax = new Map<string, string>();
  let longName: string | undefined;
  let longLink: string | undefined;
  let lastEntry = '(start of archive)';
  try {
    for (;;) {
      const header = await src.read(BLOCK);
      if (header.length === 0)
        throw archiveError(`truncated archive: no end-of-archive marker after ${lastEntry}`);
      if (header.length < BLOCK) throw archiveError(`truncated archive: partial header after ${lastEntry}`);
      if (isZeroBlock(header)) return;
      const rawName = cString(header, 0, 100);
      const prefix =
        header.subarray(257, 262).toString('latin1') === 'ustar' ? cString(header, 345, 155) : '';
      const headerName = prefix ? `${prefix}/${rawName}` : rawName;
      const where = headerName || `header at byte ${src.position - BLOCK}`;
      const expected = parseNumber(header, 148, 8, 'checksum', where);
      if (expected !== headerChecksum(header))
        throw archiveError(`bad header checksum for ${where} at byte ${src.position - BLOCK}`, where);
      const flag = String.fromCharCode(header[156]!);
      const size = parseNumber(header, 124, 12, 'size', where);
      if (flag === PAX_LOCAL || flag === PAX_GLOBAL || flag === GNU_LONG_NAME || flag === GNU_LONG_LINK) {
        if (size > maxMeta)
          throw archiveError(`meta entry of ${size} bytes before ${where} exceeds ${maxMeta} bytes`, where);
        const data = await src.read(size);
        if (data.length < size)
          throw archiveError(`truncated archive: meta entry before ${where} is cut short`, where);
        await src.read(paddingFor(size));
        if (flag === PAX_LOCAL) pax = parsePax(data, where);
        else if (flag === PAX_GLOBAL) for (const [k, v] of parsePax(data, where)) globalPax.set(k, v);
        else {
          const nul = data.indexOf(0);
          const text = data.subarray(0, nul === -1 ? data.length : nul).toString('utf8');
          if (flag === GNU_LONG_NAME) longName = text;
          else longLink = text;
        }
        continue;
      }
      const path = pax.get('path') ?? longName ?? globalPax.get('path') ?? headerName;
      const type = entryTypeOfFlag(flag);
      if (type === undefined)
        throw archiveError(`unsupported tar entry type ${JSON.stringify(flag)} for ${path}`, path);
      const paxSize = pax.get('size');
      let entrySize = size;
      if (paxSize !== undefined) {
        entrySize = Number(paxSize);
        if (!/^\d+$/.test(paxSize) || !Number.isSafeInteger(entrySize))
          throw archiveError(`invalid pax size ${JSON.stringify(paxSize)} for ${path}`, path);
      }
      // Links, devices and directories carry no data even when a header claims a size (except hardlinks in pax).
      const dataSize = type === 'file' || type === 'contiguous-file' ? entrySize : 0;
      const linkTarget = pax.get('linkpath') ?? longLink ?? cString(header, 157, 100);
      pax = new Map();
      longName = undefined;
      longLink = undefined;
      lastEntry = path;
      let remaining = dataSize;
      let consumed = false;
      const entry: TarEntry = {
        path,
        type,
        size: dataSize,
        mode: parseNumber(header, 100, 8, 'mode', path),
        mtime: parseNumber(header, 136, 12, 'mtime', path),
        ...(type === 'symlink' || type === 'hardlink' ? { linkTarget } : {}),
        body: () => {
          if (consumed) throw archiveError(`body of ${path} was already read`, path);
          consumed = true;
          return (async function* () {
            while (remaining > 0) {
              const chunk = await src.readSome(Math.min(remaining, 1024 * 1024));
              if (chunk.length === 0)
                throw archiveError(`truncated archive: data of ${path} ends ${remaining} bytes early`, path);
              remaining -= chunk.length;
              yield chunk;
            }
          })();
        },
      };
      yield entry;
      // Skip whatever the consumer left unread, then the padding to the next header.
      while (remaining > 0) {
        const chunk = await src.readSome(Math.min(remaining, 1024 * 1024));
        if (chunk.length === 0)
          throw archiveError(`truncated archive: data of ${path} ends ${remaining} bytes early`, path);
        remaining -= chunk.length;
      }
      const pad = paddingFor(dataSize);
      if ((await src.read(pad)).length < pad)
        throw archiveError(`truncated archive: padding after ${path} is cut short`, path);
    }
  } finally {
    await src.close();
  }
}

const GZIP_MAGIC = [0x1f, 0x8b];

/**
 * A bound on how many bytes a compressed archive may unpack to. The stager tightens `maxBytes` once it knows
 * what the manifest lists; `position` is how many unpacked bytes have been produced so far.
 */
export interface DecompressionBudget {
  maxBytes: number;
  /** Completes "unpacks to more than N bytes: …" in the error. */
  why: string;
  position: number;
  /** Set by tarChunksFromFile: whether the file is gzip-compressed. */
  compressed: boolean;
}

/**
 * The archive's tar bytes, gunzipped on the fly when the file starts with the gzip magic. With a budget, the
 * unpacked stream stops with EARCHIVE as soon as it passes budget.maxBytes.
 */
export function tarChunksFromFile(path: string, budget?: DecompressionBudget): AsyncIterable<Uint8Array> {
  const fd = openSync(path, 'r');
  const magic = Buffer.alloc(2);
  let n: number;
  try {
    n = readSync(fd, magic, 0, 2, 0);
  } finally {
    closeSync(fd);
  }
  const file = createReadStream(path, { highWaterMark: 256 * 1024 });
  if (n !== 2 || magic[0] !== GZIP_MAGIC[0] || magic[1] !== GZIP_MAGIC[1]) return file;
  const gunzip = createGunzip();
  if (budget) budget.compressed = true;
  file.on('error', (err) => gunzip.destroy(err));
  return (async function* () {
    try {
      for await (const chunk of file.pipe(gunzip) as AsyncIterable<Buffer>) {
        if (budget) {
          budget.position += chunk.length;
          if (budget.position > budget.maxBytes)
            throw archiveError(`${path} unpacks to more than ${budget.maxBytes} bytes: ${budget.why}`);
        }
        yield chunk;
      }
    } catch (err) {
      if ((err as { code?: string }).code?.startsWith('Z_'))
        throw archiveError(`${path}: corrupt gzip stream (${(err as Error).message})`);
      throw err;
    } finally {
      file.destroy();
      gunzip.destroy();
    }
  })();
}
