// Resumable, verified download of one artifact into the staging directory. Bytes go to `<dest>.part`; the
// sha256 is updated only after the bytes reached the file, so the running hash always equals the file's prefix
// and a retry continues from there with an HTTP Range request. Only a complete file whose hash matches is
// fsynced and renamed to `<dest>`: a power cut leaves either a resumable .part or a fully verified file.

import { createHash, type Hash } from 'node:crypto';
import {
  closeSync,
  constants,
  createReadStream,
  fdatasync,
  write as fsWrite,
  writev as fsWritev,
  fsync,
  ftruncateSync,
  openSync,
  rmSync,
  statfsSync,
  statSync,
} from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type Clock, sleep as defaultSleep, systemClock } from '../clock.js';
import { renameDurable } from '../durable-fs.js';
import { MnnEdgeError } from '../errors.js';
import { httpsRequest } from '../lazy-https.js';
import { TypedEventEmitter } from '../typed-events.js';
import { DownloadRejection } from './rejection.js';
import {
  deadlineRejection,
  defaultRetrievalPolicy,
  RateWindow,
  retrievalDeadlineMs,
} from './retrieval-guard.js';

export interface DownloadTarget {
  url: string;
  /** Final path of the verified file; `<dest>.part` holds the partial download. */
  dest: string;
  length: number;
  /** Expected sha256; absent (hub files whose host states none), the hash is computed and returned, and the
   *  caller must establish trust some other way. */
  sha256?: string;
  /** Extra request headers (a hub token for a file served by the hub itself). */
  headers?: Record<string, string>;
}

export interface DownloadPolicy {
  /** Bandwidth cap in bytes per second; 0 = unlimited. */
  maxBytesPerSecond: number;
  /** Consecutive failed attempts (without any new bytes) before giving up. */
  retries: number;
  backoffMs: number;
  maxBackoffMs: number;
  /** Free space that must remain after the download and whatever else the caller needs (extraBytes). */
  headroomBytes: number;
  /** A connection with no data for this long is dropped and retried. */
  idleTimeoutMs: number;
  /** PEM CA bundle for https:// servers with a private CA. */
  ca?: string;
  /** Slow-retrieval bound: the slowest acceptable average rate over rateWindowMs (0 disables it). */
  minBytesPerSecond: number;
  rateWindowMs: number;
}

export const defaultDownloadPolicy: DownloadPolicy = {
  maxBytesPerSecond: 0,
  retries: 8,
  backoffMs: 500,
  maxBackoffMs: 30_000,
  headroomBytes: 64 * 1024 * 1024,
  idleTimeoutMs: 30_000,
  ...defaultRetrievalPolicy,
};

export interface DownloadProgress {
  done: number;
  total: number;
}

export type DownloadEvents = {
  progress: DownloadProgress;
  retry: { attempt: number; delayMs: number; error: string; done: number };
};

export interface DownloadDeps {
  clock?: Clock;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Free bytes available to an unprivileged writer in `dir`. */
  freeBytes?: (dir: string) => number;
  random?: () => number;
}

export interface DownloadResult {
  path: string;
  bytes: number;
  resumedFrom: number;
  attempts: number;
  /** sha256 of the file's bytes (equal to the expected one when one was given). */
  sha256: string;
}

export function freeBytesIn(dir: string): number {
  const s = statfsSync(dir);
  return Number(s.bavail) * Number(s.bsize);
}

class RetryableError extends Error {}

/** Everything the sink has written, shared across attempts. */
interface SinkState {
  fd: number;
  hash: Hash;
  offset: number;
  length: number;
  /** A write still in flight when a connection drops; the next attempt waits for it to land. */
  inflight: Promise<void>;
  /** Bytes written since the last early flush started. */
  unflushed: number;
  /** The early flush in flight (see FLUSH_EVERY_BYTES); the descriptor stays open until it settles. */
  flushing: Promise<void>;
}

/**
 * Written bytes are pushed to the disk every this many bytes, in the background, while the transfer goes on:
 * otherwise a large file sits dirty in the page cache and the fsync that makes it durable writes all of it at
 * the end, with the network idle. This keeps that final fsync short (bench/pull.bench.ts measures it).
 */
const FLUSH_EVERY_BYTES = 32 * 1024 * 1024;

function fsyncAsync(fd: number, dataOnly = false): Promise<void> {
  return new Promise((resolve, reject) =>
    (dataOnly ? fdatasync : fsync)(fd, (err) => (err ? reject(err) : resolve())),
  );
}

export class Downloader extends TypedEventEmitter<DownloadEvents> {
  readonly #policy: DownloadPolicy;
  readonly #clock: Clock;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #freeBytes: (dir: string) => number;
  readonly #random: () => number;

  constructor(policy: Partial<DownloadPolicy> = {}, deps: DownloadDeps = {}) {
    super();
    const merged = { ...defaultDownloadPolicy, ...policy };
    // Our own bandwidth cap must never make us look like a slow server: the minimum stays below half of it.
    if (merged.maxBytesPerSecond > 0 && merged.minBytesPerSecond > merged.maxBytesPerSecond / 2)
      merged.minBytesPerSecond = Math.floor(merged.maxBytesPerSecond / 2);
    this.#policy = merged;
    this.#clock = deps.clock ?? systemClock;
    this.#sleep = deps.sleep ?? defaultSleep;
    this.#freeBytes = deps.freeBytes ?? freeBytesIn;
    this.#random = deps.random ?? Math.random;
  }

  /** @param extraBytes space the caller needs besides the download itself (e.g. the unpacked package). */
  async fetch(
    target: DownloadTarget,
    options: { signal?: AbortSignal; extraBytes?: number } = {},
  ): Promise<DownloadResult> {
    const verified = await this.#alreadyVerified(target);
    if (verified !== undefined) {
      this.emit('progress', { done: target.length, total: target.length });
      return {
        path: target.dest,
        bytes: target.length,
        resumedFrom: target.length,
        attempts: 0,
        sha256: verified,
      };
    }
    const part = `${target.dest}.part`;
    const deadline = this.#deadline(target, options.signal);
    // Not O_APPEND: Linux pwrite() ignores the offset on append-mode descriptors.
    const fd = openSync(part, constants.O_RDWR | constants.O_CREAT, 0o644);
    try {
      let offset = statSync(part).size;
      if (offset > target.length) {
        ftruncateSync(fd, 0);
        offset = 0;
      }
      this.#checkSpace(dirname(part), target.length - offset + (options.extraBytes ?? 0));
      const state: SinkState = {
        fd,
        hash: createHash('sha256'),
        offset: 0,
        length: target.length,
        inflight: Promise.resolve(),
        unflushed: 0,
        flushing: Promise.resolve(),
      };
      if (offset > 0) await hashPrefix(part, offset, state.hash);
      state.offset = offset;
      const resumedFrom = offset;
      const attempts = await this.#transfer(target, state, deadline.signal).finally(() => state.flushing);
      // On the thread pool: a large file's last flush must not stall the agent's event loop.
      await fsyncAsync(fd);
      const digest = state.hash.digest('hex');
      if (target.sha256 !== undefined && digest !== target.sha256) {
        closeSync(fd);
        rmSync(part, { force: true });
        throw new DownloadRejection(
          'hash-mismatch',
          `Downloaded ${target.url} has sha256 ${digest}, expected ${target.sha256}`,
          { expected: target.sha256, actual: digest },
        );
      }
      closeSync(fd);
      renameDurable(part, target.dest);
      return { path: target.dest, bytes: target.length, resumedFrom, attempts, sha256: digest };
    } catch (err) {
      try {
        closeSync(fd);
      } catch {
        // already closed on the hash-mismatch path
      }
      // A wrong length means the server has a different file: resuming it can never succeed.
      if (err instanceof DownloadRejection) rmSync(part, { force: true });
      throw err;
    } finally {
      deadline.clear();
    }
  }

  /** The caller's signal, also aborted with a 'deadline' rejection when the signed length's deadline passes. */
  #deadline(target: DownloadTarget, signal?: AbortSignal): { signal: AbortSignal; clear: () => void } {
    const ms = retrievalDeadlineMs(target.length, this.#policy);
    const controller = new AbortController();
    const timer = Number.isFinite(ms)
      ? setTimeout(
          () => controller.abort(deadlineRejection(`Artifact at ${target.url}`, ms, target.length)),
          ms,
        )
      : undefined;
    return {
      signal: signal ? AbortSignal.any([signal, controller.signal]) : controller.signal,
      clear: () => clearTimeout(timer),
    };
  }

  /** The sha256 of a complete `dest` left by an earlier run, or undefined when it must be fetched again. */
  async #alreadyVerified(target: DownloadTarget): Promise<string | undefined> {
    let size: number;
    try {
      size = statSync(target.dest).size;
    } catch {
      return undefined;
    }
    if (size === target.length) {
      const h = createHash('sha256');
      await hashPrefix(target.dest, size, h);
      const digest = h.digest('hex');
      if (target.sha256 === undefined || digest === target.sha256) return digest;
    }
    rmSync(target.dest, { force: true });
    return undefined;
  }

  #checkSpace(dir: string, needed: number): void {
    const free = this.#freeBytes(dir);
    const required = needed + this.#policy.headroomBytes;
    if (free < required) {
      throw new MnnEdgeError(
        'ENOSPC',
        `Not enough disk space in ${dir}: ${required} bytes needed (${needed} + ${this.#policy.headroomBytes} headroom), ${free} free`,
        { required, free },
      );
    }
  }

  async #transfer(target: DownloadTarget, state: SinkState, signal?: AbortSignal): Promise<number> {
    let failures = 0;
    let attempts = 0;
    while (state.offset < state.length) {
      signal?.throwIfAborted();
      attempts++;
      const before = state.offset;
      try {
        await this.#attempt(target, state, signal);
        if (state.offset < state.length) throw new RetryableError('connection closed early');
      } catch (err) {
        // A destroyed stream does not cancel a write the filesystem already has: let it land (and be hashed)
        // before the next Range request is computed from the offset.
        await state.inflight;
        if (signal?.aborted) throw signal.reason;
        if (!(err instanceof RetryableError) && !isNetworkError(err)) {
          if (err instanceof MnnEdgeError) throw err;
          // TLS and other permanent transport errors: retrying cannot help.
          throw new MnnEdgeError('EDOWNLOAD', `Download of ${target.url} failed: ${(err as Error).message}`, {
            code: (err as { code?: unknown }).code,
          });
        }
        failures = state.offset > before ? 1 : failures + 1;
        if (failures > this.#policy.retries) {
          throw new MnnEdgeError(
            'EDOWNLOAD',
            `Download of ${target.url} failed after ${failures} attempts without progress: ${(err as Error).message}`,
            { done: state.offset, total: state.length },
          );
        }
        const exp = Math.min(this.#policy.maxBackoffMs, this.#policy.backoffMs * 2 ** (failures - 1));
        const delayMs = Math.round(exp * (0.5 + this.#random() / 2));
        this.emit('retry', { attempt: attempts, delayMs, error: (err as Error).message, done: state.offset });
        await this.#sleep(delayMs, signal);
      }
    }
    return attempts;
  }

  async #attempt(target: DownloadTarget, state: SinkState, signal?: AbortSignal): Promise<void> {
    const res = await this.#request(target.url, state.offset, signal, target.headers);
    const status = res.statusCode ?? 0;
    if (status >= 500 || status === 408 || status === 429) {
      res.resume();
      throw new RetryableError(`HTTP ${status} from ${target.url}`);
    }
    if (status === 416) {
      res.resume();
      throw new DownloadRejection(
        'length-mismatch',
        `Server refused range from byte ${state.offset} of ${target.url}: the file is shorter than the expected ${state.length} bytes`,
      );
    }
    if (status === 200 && state.offset > 0) {
      // The server ignored the Range header: start over from byte 0.
      ftruncateSync(state.fd, 0);
      state.offset = 0;
      state.hash = createHash('sha256');
    } else if (status === 206) {
      const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers['content-range'] ?? '');
      if (!range || Number(range[1]) !== state.offset) {
        res.resume();
        throw new RetryableError(`unexpected Content-Range ${res.headers['content-range'] ?? '(none)'}`);
      }
      if (range[3] !== '*' && Number(range[3]) !== state.length) {
        res.resume();
        throw lengthMismatch(target, Number(range[3]));
      }
    } else if (status !== 200) {
      res.resume();
      throw new MnnEdgeError('EDOWNLOAD', `HTTP ${status} from ${target.url}`, { status });
    }
    const declared = res.headers['content-length'];
    if (declared !== undefined && Number(declared) !== state.length - state.offset) {
      res.resume();
      throw lengthMismatch(target, state.offset + Number(declared));
    }
    const window = new RateWindow(this.#policy, this.#clock, `Artifact at ${target.url}`);
    res.on('data', (chunk: Buffer) => window.add(chunk.length));
    const watch = setInterval(() => {
      const slow = window.check();
      if (slow) res.destroy(slow);
    }, window.intervalMs);
    try {
      await pipeline(res, this.#sink(target, state), { signal });
    } finally {
      clearInterval(watch);
    }
    // A body that ended cleanly but short means the file is shorter than signed, not a cut connection.
    if (res.complete && state.offset < state.length) throw lengthMismatch(target, state.offset);
  }

  #request(
    url: string,
    offset: number,
    signal?: AbortSignal,
    extra?: Record<string, string>,
  ): Promise<IncomingMessage> {
    const parsed = new URL(url);
    const headers: Record<string, string> = { ...extra, 'accept-encoding': 'identity' };
    if (offset > 0) headers['range'] = `bytes=${offset}-`;
    return new Promise((resolve, reject) => {
      const options = { headers, signal, ...(this.#policy.ca ? { ca: this.#policy.ca } : {}) };
      let req: ReturnType<typeof httpRequest>;
      if (parsed.protocol === 'https:') req = httpsRequest(parsed, options, resolve);
      else if (parsed.protocol === 'http:') req = httpRequest(parsed, options, resolve);
      else
        return reject(new MnnEdgeError('EDOWNLOAD', `Unsupported URL scheme ${parsed.protocol} in ${url}`));
      req.setTimeout(this.#policy.idleTimeoutMs, () =>
        req.destroy(new RetryableError(`no data for ${this.#policy.idleTimeoutMs} ms`)),
      );
      req.on('error', reject);
      req.end();
    });
  }

  #sink(target: DownloadTarget, state: SinkState): Writable {
    const rate = this.#policy.maxBytesPerSecond;
    const startMs = this.#clock.monotonicMs();
    const startOffset = state.offset;
    const writeAll = (chunks: Buffer[], done: (err?: Error | null) => void) => {
      const size = chunks.reduce((n, c) => n + c.length, 0);
      if (state.offset + size > state.length) {
        return done(lengthMismatch(target, state.offset + size, 'at least '));
      }
      let landed: () => void = () => {};
      state.inflight = new Promise((resolve) => {
        landed = resolve;
      });
      const after = (err: NodeJS.ErrnoException | null, written: number) => {
        if (err || written !== size) {
          landed();
          // Nothing is counted: positional writes let the next attempt rewrite the same range.
          return done(
            err ?? new MnnEdgeError('EIO', `Short write to ${target.dest}.part: ${written} of ${size} bytes`),
          );
        }
        for (const c of chunks) state.hash.update(c);
        state.offset += size;
        state.unflushed += size;
        if (state.unflushed >= FLUSH_EVERY_BYTES) {
          state.unflushed = 0;
          // One flush at a time, its failure ignored: the final fsync reports any write error that matters.
          state.flushing = state.flushing.then(() => fsyncAsync(state.fd, true).catch(() => {}));
        }
        landed();
        this.emit('progress', { done: state.offset, total: state.length });
        if (rate <= 0) return done();
        // Token bucket with a zero-size burst: hold the stream until the average rate is back under the cap.
        const dueMs = startMs + ((state.offset - startOffset) / rate) * 1000;
        const waitMs = dueMs - this.#clock.monotonicMs();
        if (waitMs > 1) this.#sleep(waitMs).then(() => done(), done);
        else done();
      };
      // Positional writes: the file offset is ours, never an append racing a truncate.
      if (chunks.length === 1) fsWrite(state.fd, chunks[0]!, 0, size, state.offset, after);
      else fsWritev(state.fd, chunks, state.offset, after);
    };
    return new Writable({
      highWaterMark: 1 << 20,
      write: (chunk: Buffer, _enc, cb) => writeAll([chunk], cb),
      writev: (items, cb) =>
        writeAll(
          items.map((i) => i.chunk as Buffer),
          cb,
        ),
    });
  }
}

function lengthMismatch(target: DownloadTarget, actual: number, qualifier = ''): DownloadRejection {
  return new DownloadRejection(
    'length-mismatch',
    `Artifact at ${target.url} is ${qualifier}${actual} bytes, expected ${target.length}`,
    { expected: target.length, actual },
  );
}

function isNetworkError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return (
    typeof code === 'string' &&
    [
      'ECONNRESET',
      'ECONNREFUSED',
      'EPIPE',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'EAI_AGAIN',
      'ERR_STREAM_PREMATURE_CLOSE',
    ].includes(code)
  );
}

async function hashPrefix(path: string, length: number, hash: Hash): Promise<void> {
  if (length === 0) return;
  for await (const chunk of createReadStream(path, { start: 0, end: length - 1, highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
  }
}
