// bench/pull: a multi-file MNN export (1 GiB by default) pulled from the Hugging Face stand-in over loopback by
// `models pull` (list, resolve, Range download with sha256 while streaming, fsync, derived manifest, store
// install), next to `curl -L` of the same files through the same redirects with `sha256sum` beside each and a
// final `sync`, measured in the same run and alternated. Targets (issue 20): ours ≥ 0.8× curl's throughput,
// and a pull cut at 50 % and run again re-downloads ≤ 1 % extra. PULL_BENCH_BYTES / PULL_BENCH_RUNS override.
import { type ChildProcess, fork, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../agent/store/database.js';
import { Downloader } from '../lib/download/downloader.js';
import { defaultHubHttpPolicy } from '../models/hub/http.js';
import { HuggingFaceClient } from '../models/hub/huggingface.js';
import { pullFromHub } from '../models/hub/pull.js';
import { ModelStore } from '../models/index.js';
import { gitBlobOid, type StandinFile } from '../test/helpers/hub-standins.js';
import { modelFixturesDir } from '../test/helpers/paths.js';
import { bar, check, describe, fmt, summarize } from './lib/stats.js';

const SIZE = Number(process.env['PULL_BENCH_BYTES'] ?? 1024 ** 3);
const RUNS = Number(process.env['PULL_BENCH_RUNS'] ?? 3);
const TARGET = 0.8;
const RESUME_TARGET = 0.01;

const work = mkdtempSync(join(tmpdir(), 'pull-bench-'));
try {
  const served = join(work, 'served');
  mkdirSync(served);
  const files: StandinFile[] = [];
  const small = (name: string) => {
    const path = join(served, name);
    copyFileSync(join(modelFixturesDir, 'tiny-llm', name), path);
    const bytes = readFileSync(path);
    files.push({
      path: name,
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      gitOid: gitBlobOid(bytes),
      lfs: name.endsWith('.mnn'),
      source: path,
    });
  };
  for (const name of ['config.json', 'llm_config.json', 'tokenizer.txt', 'llm.mnn']) small(name);
  // Generated, not sparse: the server must really read pages. Split as MNN exports split their weights.
  const rest = SIZE - files.reduce((a, f) => a + f.size, 0);
  const parts: [string, number][] = [
    ['llm.mnn.weight', Math.floor(rest * 0.6)],
    ['embeddings_bf16.bin', Math.floor(rest * 0.25)],
    ['visual/visual.mnn.weight', rest - Math.floor(rest * 0.6) - Math.floor(rest * 0.25)],
  ];
  const block = Buffer.alloc(4 * 1024 * 1024);
  let seed = 0;
  for (const [name, size] of parts) {
    const path = join(served, name);
    mkdirSync(join(path, '..'), { recursive: true });
    const hash = createHash('sha256');
    const fd = openSync(path, 'w');
    for (let done = 0; done < size; done += block.length) {
      for (let i = 0; i + 4 <= block.length; i += 4)
        block.writeUInt32LE(((seed++ + i) * 2654435761) >>> 0, i);
      const chunk = block.subarray(0, Math.min(block.length, size - done));
      hash.update(chunk);
      writeSync(fd, chunk);
    }
    closeSync(fd);
    // LFS files are known by their sha256; the git id is never consulted for them.
    files.push({
      path: name,
      size,
      sha256: hash.digest('hex'),
      gitOid: '0'.repeat(40),
      lfs: true,
      source: path,
    });
  }
  const commit = createHash('sha1')
    .update(JSON.stringify(files.map((f) => f.sha256)))
    .digest('hex');
  const repoFile = join(work, 'repo.json');
  writeFileSync(repoFile, JSON.stringify({ owner: 'bench', name: 'big-MNN', commit, files }));
  const child: ChildProcess = fork(join(import.meta.dirname, 'lib', 'hub-standin-process.ts'), [repoFile], {
    execArgv: ['--import=tsx'],
  });
  const ask = <T>(msg: unknown): Promise<T> =>
    new Promise((resolve) => {
      child.once('message', (m) => resolve(m as T));
      if (msg !== undefined) child.send(msg as never);
    });
  const hub = {
    endpoint: (await ask<{ endpoint: string }>(undefined)).endpoint,
    bytes: async () => (await ask<{ bytes: number }>({ cmd: 'bytes' })).bytes,
    cut: (plan: number[]) => ask({ cmd: 'cut', plan }),
    close: () => new Promise<void>((resolve) => child.on('exit', () => resolve()).send({ cmd: 'close' })),
  };
  const client = () =>
    new HuggingFaceClient({
      endpoint: hub.endpoint,
      policy: { ...defaultHubHttpPolicy, allowLoopbackHttp: true },
    });
  const ref = { hub: 'huggingface' as const, owner: 'bench', name: 'big-MNN' };

  const pull = async (
    dataDir: string,
    downloader = new Downloader({ headroomBytes: 0 }),
    signal?: AbortSignal,
  ) => {
    const db = openStore(join(dataDir, 'agent.db'));
    const { store } = ModelStore.open({ dataDir, db });
    try {
      return await pullFromHub(
        ref,
        {
          client: client(),
          store,
          downloader,
          workRoot: join(dataDir, 'hub-downloads'),
          headroomBytes: 0,
        },
        signal ? { signal } : {},
      );
    } finally {
      store.close();
      db.close();
    }
  };

  const curl = spawnSync('curl', ['--version']).status === 0;
  const ours: number[] = [];
  const theirs: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const dataDir = join(work, `ours-${run}`);
    mkdirSync(dataDir);
    const t0 = process.hrtime.bigint();
    const r = await pull(dataDir);
    ours.push(Number(process.hrtime.bigint() - t0) / 1e9);
    if (r.status !== 'installed') throw new Error('the pull did not install');
    rmSync(dataDir, { recursive: true, force: true });
    if (curl) {
      const out = join(work, `curl-${run}`);
      mkdirSync(out);
      const lines = files.map((f, i) => {
        const url = `${hub.endpoint}/bench/big-MNN/resolve/${commit}/${f.path}`;
        return `curl -sS --fail -L '${url}' | tee >(sha256sum > '${out}/${i}.sha') > '${out}/${i}'`;
      });
      const t1 = process.hrtime.bigint();
      const status = await new Promise<number | null>((resolve) =>
        spawn('bash', ['-c', `set -e; ${lines.join('; ')}; sync`], {
          stdio: ['ignore', 'ignore', 'inherit'],
        }).on('exit', resolve),
      );
      theirs.push(Number(process.hrtime.bigint() - t1) / 1e9);
      if (status !== 0) throw new Error(`baseline failed with status ${status}`);
      rmSync(out, { recursive: true, force: true });
    }
  }

  // Resume: the connection is cut at half the repository's bytes, the agent stops there (as if the board lost
  // power), and a new pull continues; the hub counts every byte it sent.
  const resumeDir = join(work, 'resume');
  mkdirSync(resumeDir);
  const servedBefore = await hub.bytes();
  let before = 0;
  const plan: number[] = [];
  for (const f of files) {
    if (f.size === 0) continue;
    if (before + f.size <= SIZE / 2) plan.push(Number.MAX_SAFE_INTEGER);
    else {
      plan.push(Math.floor(SIZE / 2 - before));
      break;
    }
    before += f.size;
  }
  await hub.cut(plan);
  const stop = new AbortController();
  const cutDownloader = new Downloader({ headroomBytes: 0 });
  cutDownloader.on('retry', () => stop.abort(new Error('stopped after the cut')));
  await pull(resumeDir, cutDownloader, stop.signal).then(
    () => {
      throw new Error('the cut did not stop the pull');
    },
    () => {},
  );
  const firstPart = (await hub.bytes()) - servedBefore;
  const resumed = await pull(resumeDir);
  const servedTotal = (await hub.bytes()) - servedBefore;
  const extra = (servedTotal - SIZE) / SIZE;
  rmSync(resumeDir, { recursive: true, force: true });
  await hub.close();

  const mib = SIZE / 1024 ** 2;
  const oursRate = summarize(ours.map((s) => mib / s));
  console.log(
    `repository: ${fmt(mib, 0)} MiB in ${files.length} files over loopback HTTP, ${RUNS} runs each, alternated`,
  );
  console.log(`models pull (verify + fsync + derive + install): ${describe(oursRate, 'MiB/s', 0)}`);
  if (theirs.length > 0) {
    const theirRate = summarize(theirs.map((s) => mib / s));
    console.log(`curl -L | tee >(sha256sum), per file; sync:   ${describe(theirRate, 'MiB/s', 0)}`);
    const ratio = oursRate.median / theirRate.median;
    const max = Math.max(oursRate.median, theirRate.median);
    console.log(bar('models pull', oursRate.median, max, `${fmt(oursRate.median, 0)} MiB/s`));
    console.log(bar('curl + sha256sum; sync', theirRate.median, max, `${fmt(theirRate.median, 0)} MiB/s`));
    console.log(
      `ratio ours/curl: ${fmt(ratio)}× (target ≥ ${TARGET}×) ${check('pull ours/curl', ratio, '×', `≥ ${TARGET}`, ratio >= TARGET)}`,
    );
  } else {
    console.log('curl not found: no baseline this run');
  }
  console.log(
    `resume after a cut at 50 %: ${fmt(firstPart / 1024 ** 2, 0)} MiB before the cut, ${fmt((servedTotal - firstPart) / 1024 ** 2, 0)} MiB after; ` +
      `${resumed.status}, re-downloaded ${fmt(extra * 100, 3)} % extra (target ≤ ${RESUME_TARGET * 100} %) ${check('resume extra', extra * 100, '%', `≤ ${RESUME_TARGET * 100}`, extra <= RESUME_TARGET)}`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
