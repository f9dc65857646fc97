import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { Downloader } from '../../lib/download/downloader.js';
import { DownloadRejection } from '../../lib/download/rejection.js';
import { servePackages } from '../../ota/tools/serve.js';

const noSleep = async () => {};

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/f`),
    ),
  );
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Serves `data` with Range support but cuts every response at a random offset until `cuts` have happened. */
function flakyServer(data: Buffer, cuts: number, seen: { ranges: number[] }) {
  let left = cuts;
  return createServer((req, res) => {
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    seen.ranges.push(start);
    const body = data.subarray(start);
    res.writeHead(m ? 206 : 200, {
      'content-length': String(body.length),
      ...(m ? { 'content-range': `bytes ${start}-${data.length - 1}/${data.length}` } : {}),
    });
    if (left > 0 && body.length > 1) {
      left--;
      const cut = 1 + Math.floor(Math.random() * (body.length - 1));
      res.write(body.subarray(0, cut), () => res.socket?.destroy());
    } else {
      res.end(body);
    }
  });
}

function tmp(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'ota-dl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

test('resumes with Range after the server cuts the connection at random offsets', async (t) => {
  const data = randomBytes(3 * 1024 * 1024 + 17);
  const seen = { ranges: [] as number[] };
  const server = flakyServer(data, 6, seen);
  const url = await listen(server);
  t.teardown(() => close(server));
  const dir = tmp(t);
  const dl = new Downloader({ retries: 3 }, { sleep: noSleep });
  const retries: number[] = [];
  dl.on('retry', (r) => retries.push(r.done));
  let last = 0;
  dl.on('progress', (p) => {
    t.true(p.done >= last);
    last = p.done;
  });
  const dest = join(dir, 'pkg.tar');
  const result = await dl.fetch({ url, dest, length: data.length, sha256: sha(data) });
  // Six cuts, so at least seven requests; each one resumed where the bytes on disk ended, never from 0.
  t.true(result.attempts >= 7);
  t.is(seen.ranges.length, 7);
  t.is(seen.ranges[0], 0);
  for (let i = 1; i < seen.ranges.length; i++) {
    t.true(seen.ranges[i]! > seen.ranges[i - 1]!);
    t.true(retries.includes(seen.ranges[i]!));
  }
  t.deepEqual(readFileSync(dest), data);
  t.false(existsSync(`${dest}.part`));
  t.is(last, data.length);
});

test('a .part left by an earlier process is resumed, and a verified file is not fetched again', async (t) => {
  const dir = tmp(t);
  const data = randomBytes(256 * 1024);
  writeFileSync(join(dir, 'p.tar'), data);
  const srv = await servePackages(dir);
  t.teardown(() => srv.close());
  const staging = tmp(t);
  const dest = join(staging, 'p.tar');
  writeFileSync(`${dest}.part`, data.subarray(0, 100_000));
  const dl = new Downloader({}, { sleep: noSleep });
  const first = await dl.fetch({ url: `${srv.baseUrl}p.tar`, dest, length: data.length, sha256: sha(data) });
  t.is(first.resumedFrom, 100_000);
  t.deepEqual(readFileSync(dest), data);
  const again = await dl.fetch({ url: `${srv.baseUrl}p.tar`, dest, length: data.length, sha256: sha(data) });
  t.is(again.attempts, 0);
});

test('flipped byte → hash-mismatch, nothing left in staging', async (t) => {
  const dir = tmp(t);
  const data = randomBytes(64 * 1024);
  const flipped = Buffer.from(data);
  flipped[1234]! ^= 0xff;
  writeFileSync(join(dir, 'p.tar'), flipped);
  const srv = await servePackages(dir);
  t.teardown(() => srv.close());
  const staging = tmp(t);
  const dest = join(staging, 'p.tar');
  const err = await t.throwsAsync(
    new Downloader({}, { sleep: noSleep }).fetch({
      url: `${srv.baseUrl}p.tar`,
      dest,
      length: data.length,
      sha256: sha(data),
    }),
    { instanceOf: DownloadRejection },
  );
  t.is(err?.reason, 'hash-mismatch');
  t.is(err?.message, `Downloaded ${srv.baseUrl}p.tar has sha256 ${sha(flipped)}, expected ${sha(data)}`);
  t.false(existsSync(dest));
  t.false(existsSync(`${dest}.part`));
});

test('wrong length → length-mismatch before any byte is written', async (t) => {
  const dir = tmp(t);
  const data = randomBytes(10_000);
  writeFileSync(join(dir, 'p.tar'), data);
  const srv = await servePackages(dir);
  t.teardown(() => srv.close());
  const dest = join(tmp(t), 'p.tar');
  const err = await t.throwsAsync(
    new Downloader({}, { sleep: noSleep }).fetch({
      url: `${srv.baseUrl}p.tar`,
      dest,
      length: 9_000,
      sha256: sha(data),
    }),
    { instanceOf: DownloadRejection },
  );
  t.is(err?.reason, 'length-mismatch');
  t.is(err?.message, `Artifact at ${srv.baseUrl}p.tar is 10000 bytes, expected 9000`);
  t.false(existsSync(`${dest}.part`));
});

test('a body longer than signed (no Content-Length) is cut off at the signed length', async (t) => {
  const data = randomBytes(50_000);
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'transfer-encoding': 'chunked' });
    res.end(data);
  });
  const url = await listen(server);
  t.teardown(() => close(server));
  const dest = join(tmp(t), 'p.tar');
  const err = await t.throwsAsync(
    new Downloader({}, { sleep: noSleep }).fetch({ url, dest, length: 40_000, sha256: sha(data) }),
    { instanceOf: DownloadRejection },
  );
  t.is(err?.reason, 'length-mismatch');
  t.regex(err?.message ?? '', /^Artifact at .* is at least \d+ bytes, expected 40000$/);
});

test('disk-space check runs before the download and names the numbers', async (t) => {
  const dest = join(tmp(t), 'p.tar');
  const dl = new Downloader({ headroomBytes: 1000 }, { freeBytes: () => 5000 });
  await t.throwsAsync(
    dl.fetch(
      { url: 'http://127.0.0.1:9/x', dest, length: 4500, sha256: 'a'.repeat(64) },
      { extraBytes: 100 },
    ),
    {
      message: `Not enough disk space in ${join(dest, '..')}: 5600 bytes needed (4600 + 1000 headroom), 5000 free`,
    },
  );
});

test('gives up after the configured retries without progress, with backoff growing', async (t) => {
  const server = createServer((_req, res) => res.writeHead(503).end());
  const url = await listen(server);
  t.teardown(() => close(server));
  const delays: number[] = [];
  const dl = new Downloader(
    { retries: 3, backoffMs: 100, maxBackoffMs: 250 },
    { sleep: async (ms) => void delays.push(ms), random: () => 1 },
  );
  const dest = join(tmp(t), 'p.tar');
  await t.throwsAsync(dl.fetch({ url, dest, length: 10, sha256: 'a'.repeat(64) }), {
    message: `Download of ${url} failed after 4 attempts without progress: HTTP 503 from ${url}`,
  });
  t.deepEqual(delays, [100, 200, 250]);
});

test('bandwidth cap holds the average rate', async (t) => {
  const dir = tmp(t);
  const data = randomBytes(200_000);
  writeFileSync(join(dir, 'p.tar'), data);
  const srv = await servePackages(dir);
  t.teardown(() => srv.close());
  // A fake clock that only advances when the downloader sleeps: the requested sleeps add up to size / rate.
  let now = 0;
  const clock = { monotonicMs: () => now, nowMs: () => now };
  const dl = new Downloader(
    { maxBytesPerSecond: 100_000 },
    {
      clock,
      sleep: async (ms) => {
        now += ms;
      },
    },
  );
  const dest = join(tmp(t), 'p.tar');
  await dl.fetch({ url: `${srv.baseUrl}p.tar`, dest, length: data.length, sha256: sha(data) });
  t.true(now >= 1990 && now <= 2000, `slept ${now} ms`);
  t.is(statSync(dest).size, data.length);
});
