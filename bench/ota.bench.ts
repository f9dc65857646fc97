// bench/ota: one package served over loopback HTTP, fetched by the OTA downloader (stream to disk, sha256 while
// streaming, fsync, rename into place) next to `curl URL | tee >(sha256sum) > file; sync`, the shell's way of
// doing the same work, measured in the same run and alternated so both see the same page cache and CPU.
// Target (issue 7): ours ≥ 0.8× curl's throughput. OTA_BENCH_BYTES overrides the 1 GiB size.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Downloader } from '../lib/download/downloader.js';
import { servePackages } from '../ota/tools/serve.js';
import { bar, check, describe, fmt, summarize } from './lib/stats.js';

const SIZE = Number(process.env['OTA_BENCH_BYTES'] ?? 1024 ** 3);
const RUNS = Number(process.env['OTA_BENCH_RUNS'] ?? 3);
const TARGET = 0.8;

const work = mkdtempSync(join(tmpdir(), 'ota-bench-'));
try {
  // Generated, not sparse: a sparse file would let the server skip real page-cache reads.
  const served = join(work, 'served');
  const staging = join(work, 'staging');
  mkdirSync(served);
  mkdirSync(staging);
  const file = join(served, 'pkg.tar');
  const hash = createHash('sha256');
  const block = Buffer.alloc(4 * 1024 * 1024);
  const fd = openSync(file, 'w');
  for (let done = 0; done < SIZE; done += block.length) {
    for (let i = 0; i < block.length; i += 4) block.writeUInt32LE(((done + i) * 2654435761) >>> 0, i);
    const chunk = block.subarray(0, Math.min(block.length, SIZE - done));
    hash.update(chunk);
    writeSync(fd, chunk);
  }
  closeSync(fd);
  const sha256 = hash.digest('hex');
  const srv = await servePackages(served);
  const url = `${srv.baseUrl}pkg.tar`;
  const curl = spawnSync('curl', ['--version']).status === 0;
  const ours: number[] = [];
  const theirs: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const dest = join(staging, `ours-${run}.tar`);
    const t0 = process.hrtime.bigint();
    await new Downloader({ headroomBytes: 0 }).fetch({ url, dest, length: SIZE, sha256 });
    ours.push(Number(process.hrtime.bigint() - t0) / 1e9);
    rmSync(dest);
    if (curl) {
      const out = join(staging, `curl-${run}.tar`);
      const script = `curl -sS --fail '${url}' | tee >(sha256sum > '${out}.sha') > '${out}'; sync`;
      const t1 = process.hrtime.bigint();
      // Asynchronous: the package server runs in this process and must keep serving while curl reads.
      const status = await new Promise<number | null>((resolve) =>
        spawn('bash', ['-c', script], { stdio: ['ignore', 'ignore', 'inherit'] }).on('exit', resolve),
      );
      theirs.push(Number(process.hrtime.bigint() - t1) / 1e9);
      if (status !== 0) throw new Error(`baseline failed with status ${status}`);
      rmSync(out);
      rmSync(`${out}.sha`);
    }
  }
  await srv.close();
  const mib = SIZE / 1024 ** 2;
  const oursRate = summarize(ours.map((s) => mib / s));
  console.log(`package: ${fmt(mib, 0)} MiB over loopback HTTP, ${RUNS} runs each, alternated`);
  console.log(`ota downloader (hash + fsync + rename): ${describe(oursRate, 'MiB/s', 0)}`);
  if (theirs.length > 0) {
    const theirRate = summarize(theirs.map((s) => mib / s));
    console.log(`curl | tee >(sha256sum); sync:        ${describe(theirRate, 'MiB/s', 0)}`);
    const ratio = oursRate.median / theirRate.median;
    const max = Math.max(oursRate.median, theirRate.median);
    console.log(bar('ota downloader', oursRate.median, max, `${fmt(oursRate.median, 0)} MiB/s`));
    console.log(
      bar('curl | tee sha256sum; sync', theirRate.median, max, `${fmt(theirRate.median, 0)} MiB/s`),
    );
    console.log(
      `ratio ours/curl: ${fmt(ratio)}× (target ≥ ${TARGET}×) ${check('OTA install vs curl + sha256sum', ratio, 'x', `≥ ${TARGET}`, ratio >= TARGET)}`,
    );
  } else {
    console.log('curl not found: no baseline this run');
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
