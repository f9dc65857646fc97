// Small documents and sizes over HTTP(S), without the resumable file machinery of the Downloader: a document
// (targets, root) fetched whole into memory within a byte bound and the slow-retrieval guard, and the size a server
// announces for a URL.

import { request as httpRequest, type IncomingMessage } from 'node:http';
import { type Clock, systemClock } from '../clock.js';
import { MnnEdgeError } from '../errors.js';
import { httpsRequest } from '../lazy-https.js';
import { defaultDownloadPolicy } from './downloader.js';
import { DownloadRejection } from './rejection.js';
import {
  deadlineRejection,
  defaultRetrievalPolicy,
  RateWindow,
  type RetrievalPolicy,
  retrievalDeadlineMs,
} from './retrieval-guard.js';

function simpleRequest(url: string, method: 'GET' | 'HEAD', signal?: AbortSignal): Promise<IncomingMessage> {
  const parsed = new URL(url);
  const request =
    parsed.protocol === 'https:' ? httpsRequest : parsed.protocol === 'http:' ? httpRequest : undefined;
  if (!request)
    return Promise.reject(
      new MnnEdgeError('EDOWNLOAD', `Unsupported URL scheme ${parsed.protocol} in ${url}`),
    );
  return new Promise((resolve, reject) => {
    const req = request(parsed, { method, ...(signal ? { signal } : {}) }, resolve);
    req.setTimeout(defaultDownloadPolicy.idleTimeoutMs, () => req.destroy(new Error('timed out')));
    req.on('error', (err) => reject(new MnnEdgeError('EDOWNLOAD', `Cannot fetch ${url}: ${err.message}`)));
    req.end();
  });
}

/** The size a server announces for `url` (HEAD); used only where a hash, not the server, decides trust. */
export async function probeLength(url: string): Promise<number> {
  const res = await simpleRequest(url, 'HEAD');
  res.resume();
  const length = Number(res.headers['content-length']);
  if (res.statusCode !== 200 || !Number.isSafeInteger(length) || length <= 0) {
    throw new MnnEdgeError(
      'EDOWNLOAD',
      `HEAD ${url} gave HTTP ${res.statusCode} without a usable Content-Length`,
    );
  }
  return length;
}

/**
 * A small document (targets, root) fetched whole: refused past `maxBytes`, and held to the same slow-retrieval
 * bounds as artifacts, with the deadline derived from `maxBytes` (metadata has no signed length).
 */
export async function fetchBytes(
  url: string,
  maxBytes: number,
  policy: RetrievalPolicy = defaultRetrievalPolicy,
  clock: Clock = systemClock,
): Promise<Buffer> {
  const what = `Document at ${url}`;
  const deadlineMs = retrievalDeadlineMs(maxBytes, policy);
  const controller = new AbortController();
  const timer = Number.isFinite(deadlineMs)
    ? setTimeout(() => controller.abort(deadlineRejection(what, deadlineMs, maxBytes)), deadlineMs)
    : undefined;
  let watch: NodeJS.Timeout | undefined;
  try {
    const res = await simpleRequest(url, 'GET', controller.signal);
    if (res.statusCode !== 200) {
      res.resume();
      throw new MnnEdgeError('EDOWNLOAD', `GET ${url} gave HTTP ${res.statusCode}`);
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      res.destroy();
      throw new DownloadRejection('too-large', `${what} is ${declared} bytes, over the limit of ${maxBytes}`);
    }
    const window = new RateWindow(policy, clock, what);
    watch = setInterval(() => {
      const slow = window.check();
      if (slow) res.destroy(slow);
    }, window.intervalMs);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res as AsyncIterable<Buffer>) {
      size += chunk.length;
      window.add(chunk.length);
      if (size > maxBytes) {
        res.destroy();
        throw new DownloadRejection('too-large', `${what} is larger than ${maxBytes} bytes`);
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks);
  } catch (err) {
    if (controller.signal.aborted && controller.signal.reason instanceof DownloadRejection)
      throw controller.signal.reason;
    if (err instanceof MnnEdgeError) throw err;
    throw new MnnEdgeError('EDOWNLOAD', `Cannot fetch ${url}: ${(err as Error).message}`);
  } finally {
    clearTimeout(timer);
    clearInterval(watch);
  }
}
