// `npx tsx engine/tools/wake-keyword/real-fetch.ts [--only ID,…] [--mirrors DIR] [--record]`: gets the real
// recordings of real-sources.ts into $MNN_EDGE_CACHE/wake-audio (default ~/.cache/mnn-edge/wake-audio). Debian
// packages with `apt-get download PKG=VERSION` (no install; apt checks them against the archive's signed index)
// and `dpkg-deb -x`, audio inside .pk3/.zip taken out with unzip; repository snapshots from a local git mirror
// (`--mirrors`, default $MNN_EDGE_MIRRORS or /work/.mirror, one `<owner>+<name>/repo` git directory each, or a
// plain clone at `<owner>+<name>`). Each source is checked against real-sources.sha256: a .deb's own sha256, or for
// a repository the sha256 of its file list ("<sha256>  <path>" per audio file, sorted). A missing or corrupt source
// is named in one line and the others go on; the summary says whether the splits still hold their minimums.
// `--record` writes the digests of sources the list does not have yet (a maintainer adding a source).
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { AUDIO_EXTENSIONS } from '../../../lib/audio/decode-file.js';
import { audioSeconds } from './audio-duration.js';
import { splitSummary } from './real-audio.js';
import {
  type DebSource,
  expectedDigests,
  type GitSource,
  REAL_SOURCES,
  type RealFile,
  type RealIndex,
  type RealSource,
  realAudioCacheDir,
  SHA256_LIST,
} from './real-sources.js';

const run = promisify(execFile);
const BIG = { maxBuffer: 256 * 1024 * 1024 };

const sha256File = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) walk(p, out);
    else if (st?.isFile()) out.push(p);
  }
  return out;
}

const isAudio = (p: string) => AUDIO_EXTENSIONS.has(extname(p).toLowerCase());

/** Seconds of each file from its own header (audio-duration.ts). */
async function durations(files: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const f of files) out.set(f, await audioSeconds(f).catch(() => 0));
  return out;
}

function debFileName(s: DebSource): string {
  return `${s.package}_${s.version.replace(':', '%3a')}_all.deb`;
}

async function downloadDeb(s: DebSource, debs: string): Promise<string> {
  const path = join(debs, debFileName(s));
  if (existsSync(path)) return path;
  const work = join(debs, `.dl-${s.id}-${process.pid}`);
  mkdirSync(work, { recursive: true });
  try {
    await run('apt-get', ['download', `${s.package}=${s.version}`], { cwd: work, timeout: 60 * 60_000 });
    const got = readdirSync(work).find((f) => f.endsWith('.deb'));
    if (!got) throw new Error('apt-get download wrote no .deb');
    renameSync(join(work, got), path);
    return path;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(
      `apt-get download ${s.package}=${s.version} failed: ${(e.stderr ?? e.message).trim().split('\n').pop()}`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The package's audio (and its archives' audio) under `dest`, its copyright file beside it. */
async function extractDeb(s: DebSource, deb: string, dest: string): Promise<string[]> {
  const tmp = `${dest}.extract-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    await run('dpkg-deb', ['-x', deb, tmp], BIG);
    for (const f of walk(tmp).filter((p) => /\.(pk3|zip)$/i.test(p))) {
      // unzip exits 11 when no member matches: an archive without audio.
      await run(
        'unzip',
        ['-qq', '-o', '-C', f, '*.ogg', '*.wav', '*.flac', '*.mp3', '*.opus', '-d', `${f}.d`],
        BIG,
      ).catch((err: { code?: number }) => {
        if (err.code !== 11) throw err;
      });
    }
    const copyright = join(tmp, 'usr', 'share', 'doc', s.package, 'copyright');
    mkdirSync(dest, { recursive: true });
    if (existsSync(copyright)) copyFileSync(copyright, join(dest, 'copyright'));
    const taken: string[] = [];
    for (const f of walk(tmp)) {
      const rel = relative(tmp, f);
      if (!isAudio(f) || (s.include && !s.include.test(rel))) continue;
      const to = join(dest, rel.replace(/^usr\/share\/(games\/)?/, ''));
      mkdirSync(dirname(to), { recursive: true });
      renameSync(f, to);
      taken.push(to);
    }
    return taken;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function mirrorOf(repo: string, root: string): string | undefined {
  const base = join(root, repo.replace('/', '+'));
  for (const candidate of [join(base, 'repo'), join(base, '.git'), base])
    if (existsSync(join(candidate, 'HEAD')) || existsSync(join(candidate, 'objects'))) return candidate;
  return undefined;
}

async function extractGit(
  s: GitSource,
  gitDir: string,
  dest: string,
): Promise<{ files: string[]; speakers: Map<string, string> }> {
  const git = (...args: string[]) => run('git', ['--git-dir', gitDir, ...args], BIG);
  await git('cat-file', '-e', `${s.commit}^{commit}`).catch(() => {
    throw new Error(`the mirror ${gitDir} does not have commit ${s.commit}`);
  });
  const { stdout } = await git('ls-tree', '-r', '-z', '--name-only', s.commit, '--', ...s.paths);
  const paths = stdout.split('\0').filter((p) => p && isAudio(p) && !(s.exclude?.test(p) ?? false));
  if (paths.length === 0) throw new Error(`no audio under ${s.paths.join(', ')} at ${s.commit}`);
  const tmp = `${dest}.extract-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    await new Promise<void>((done, fail) => {
      const archive = spawn('git', ['--git-dir', gitDir, 'archive', s.commit, '--', ...s.paths], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const tar = spawn('tar', ['-x', '-C', tmp], { stdio: ['pipe', 'ignore', 'pipe'] });
      archive.stdout.pipe(tar.stdin);
      let err = '';
      archive.stderr.on('data', (d: Buffer) => (err += d.toString()));
      tar.on('close', (code) =>
        code === 0 ? done() : fail(new Error(`git archive | tar failed: ${err.trim() || code}`)),
      );
    });
    // The speaker lists are small text files of the repository: read once, then answered synchronously.
    const texts = new Map<string, string>();
    for (const p of s.speakerFiles ?? [])
      texts.set(
        p,
        await git('show', `${s.commit}:${p}`).then(
          (r) => r.stdout,
          () => '',
        ),
      );
    const speakers = new Map<string, string>();
    const files: string[] = [];
    mkdirSync(dest, { recursive: true });
    for (const p of paths) {
      const from = join(tmp, p);
      if (!existsSync(from))
        throw new Error(
          `${p} is missing from the snapshot (files of 4 MiB and more are left out of mirrors)`,
        );
      const to = join(dest, p);
      mkdirSync(dirname(to), { recursive: true });
      renameSync(from, to);
      files.push(to);
      const who = s.speakerOf?.(p, (q) => texts.get(q) ?? '');
      if (who) speakers.set(to, who);
    }
    return { files, speakers };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** A repository source's digest: its audio files' sha256s and paths, sorted by path. */
function listDigest(dest: string, files: string[]): string {
  const lines = files.map((f) => `${sha256File(f)}  ${relative(dest, f)}`).sort();
  return createHash('sha256')
    .update(`${lines.join('\n')}\n`)
    .digest('hex');
}

interface Outcome {
  id: string;
  ok: boolean;
  line: string;
  digest?: string;
}

async function fetchSource(
  s: RealSource,
  cache: string,
  mirrors: string,
  expected: Map<string, string>,
): Promise<Outcome> {
  const dest = join(cache, 'audio', s.id);
  const indexPath = join(dest, 'index.json');
  const want = expected.get(s.id);
  let digest: string;
  let files: string[];
  let speakers = new Map<string, string>();
  if (s.kind === 'deb') {
    const deb = await downloadDeb(s, join(cache, 'debs'));
    digest = sha256File(deb);
    if (want && digest !== want) {
      return {
        id: s.id,
        ok: false,
        line: `${s.id}: ${debFileName(s)} has sha256 ${digest}, real-sources.sha256 says ${want} (corrupt or another build: delete it and run again)`,
      };
    }
    if (existsSync(indexPath) && (JSON.parse(readFileSync(indexPath, 'utf8')) as RealIndex).sha256 === digest)
      return { id: s.id, ok: true, line: `${s.id}: ready`, digest };
    rmSync(dest, { recursive: true, force: true });
    files = await extractDeb(s, deb, dest);
  } else {
    const gitDir = mirrorOf(s.repo, mirrors);
    if (!gitDir)
      return {
        id: s.id,
        ok: false,
        line: `${s.id}: no snapshot of github:${s.repo} under ${mirrors} (clone it as ${join(mirrors, s.repo.replace('/', '+'))})`,
      };
    if (existsSync(indexPath) && (JSON.parse(readFileSync(indexPath, 'utf8')) as RealIndex).sha256 === want)
      return { id: s.id, ok: true, line: `${s.id}: ready`, digest: want };
    rmSync(dest, { recursive: true, force: true });
    ({ files, speakers } = await extractGit(s, gitDir, dest));
    digest = listDigest(dest, files);
    if (want && digest !== want) {
      rmSync(dest, { recursive: true, force: true });
      return {
        id: s.id,
        ok: false,
        line: `${s.id}: the files of github:${s.repo}@${s.commit.slice(0, 12)} have digest ${digest}, real-sources.sha256 says ${want}`,
      };
    }
  }
  if (files.length === 0) return { id: s.id, ok: false, line: `${s.id}: no audio found in it` };
  const secs = await durations(files);
  const other = s.kind === 'git' ? new Set(s.otherSplitSpeakers ?? []) : new Set<string>();
  const flip = s.split === 'train' ? 'eval' : 'train';
  const entries: RealFile[] = files.sort().map((f) => {
    const speaker = speakers.get(f);
    return {
      path: relative(dest, f),
      seconds: Math.round((secs.get(f) ?? 0) * 1000) / 1000,
      ...(speaker ? { speaker } : {}),
      split: speaker && other.has(speaker) ? flip : s.split,
    };
  });
  const index: RealIndex = {
    id: s.id,
    sha256: digest,
    role: s.role,
    ...(s.kind === 'git' && s.phrase ? { phrase: s.phrase } : {}),
    licence: s.licence,
    seconds: entries.reduce((n, e) => n + e.seconds, 0),
    files: entries,
  };
  writeFileSync(indexPath, `${JSON.stringify(index, null, 1)}\n`);
  return {
    id: s.id,
    ok: true,
    line: `${s.id}: ${entries.length} files, ${(index.seconds / 3600).toFixed(2)} h${want ? '' : ' (not in real-sources.sha256 yet)'}`,
    digest,
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function parseArgs(argv: string[]): { only?: Set<string>; mirrors: string; record: boolean } {
  let only: Set<string> | undefined;
  let mirrors = process.env['MNN_EDGE_MIRRORS'] ?? '/work/.mirror';
  let record = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--only') only = new Set((argv[++i] ?? '').split(','));
    else if (a === '--mirrors') mirrors = resolve(argv[++i] ?? '.');
    else if (a === '--record') record = true;
    else
      throw new Error(
        `unknown argument ${a} (usage: real-fetch.ts [--only ID,…] [--mirrors DIR] [--record])`,
      );
  }
  return { ...(only ? { only } : {}), mirrors, record };
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const { only, mirrors, record } = parseArgs(process.argv.slice(2));
  const cache = realAudioCacheDir();
  mkdirSync(join(cache, 'debs'), { recursive: true });
  // Two runs on one cache would remove each other's half-extracted sources.
  const lock = join(cache, '.fetch.lock');
  const holder = existsSync(lock) ? Number(readFileSync(lock, 'utf8')) : 0;
  if (holder > 0 && holder !== process.pid && isAlive(holder)) {
    console.log(`another real-fetch (pid ${holder}) is filling ${cache}: wait for it to finish`);
    process.exit(1);
  }
  writeFileSync(lock, String(process.pid));
  process.on('exit', () => rmSync(lock, { force: true }));
  const expected = expectedDigests();
  const failed: string[] = [];
  const recorded: string[] = [];
  for (const s of REAL_SOURCES) {
    if (only && !only.has(s.id)) continue;
    try {
      const o = await fetchSource(s, cache, mirrors, expected);
      console.log(`${o.ok ? 'ok  ' : 'FAIL'} ${o.line}`);
      if (!o.ok) failed.push(s.id);
      else if (o.digest && !expected.has(s.id)) recorded.push(`${o.digest}  ${s.id}`);
    } catch (err) {
      console.log(`FAIL ${s.id}: ${(err as Error).message.split('\n')[0]}`);
      failed.push(s.id);
    }
  }
  if (record && recorded.length > 0) {
    writeFileSync(SHA256_LIST, `${readFileSync(SHA256_LIST, 'utf8')}${recorded.join('\n')}\n`);
    console.log(`recorded ${recorded.length} digest(s) in ${SHA256_LIST}`);
  } else if (recorded.length > 0)
    console.log(`${recorded.length} source(s) have no digest in the list yet (--record adds them)`);
  const summary = splitSummary(cache);
  console.log(summary.lines.join('\n'));
  if (failed.length > 0) console.log(`missing or corrupt: ${failed.join(', ')}`);
  process.exit(summary.meetsMinimums ? 0 : 1);
}
