import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { packageEntry } from '../../agent/documents/module.js';
import { openStore } from '../../agent/store/database.js';
import { Downloader } from '../../lib/download/downloader.js';
import { defaultHubHttpPolicy } from '../../models/hub/http.js';
import { HuggingFaceClient } from '../../models/hub/huggingface.js';
import { ModelScopeClient } from '../../models/hub/modelscope.js';
import { type HubPullDeps, pullFromHub, workDirFor } from '../../models/hub/pull.js';
import { parseHubSource } from '../../models/hub/source.js';
import type { HubClient } from '../../models/hub/types.js';
import { ModelStore } from '../../models/index.js';
import {
  memoryFile,
  repoFromDir,
  type Standin,
  type StandinRepo,
  startHuggingFaceStandin,
  startModelScopeStandin,
} from '../helpers/hub-standins.js';
import { modelFixturesDir } from '../helpers/paths.js';

const loopback = { ...defaultHubHttpPolicy, allowLoopbackHttp: true };

function scratch(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'hub-pull-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function openAt(t: ExecutionContext, dataDir: string) {
  const db = openStore(join(dataDir, 'agent.db'));
  const { store } = ModelStore.open({ dataDir, db });
  t.teardown(() => {
    store.close();
    db.close();
  });
  return store;
}

type HubKind = 'hf' | 'ms';

async function standin(t: ExecutionContext, kind: HubKind, repos: StandinRepo[]): Promise<Standin> {
  const s = kind === 'hf' ? await startHuggingFaceStandin(repos) : await startModelScopeStandin(repos);
  t.teardown(() => s.close());
  return s;
}

function clientFor(kind: HubKind, s: Standin, token?: string): HubClient {
  const options = { endpoint: s.endpoint, policy: loopback, ...(token !== undefined ? { token } : {}) };
  return kind === 'hf' ? new HuggingFaceClient(options) : new ModelScopeClient(options);
}

function deps(
  t: ExecutionContext,
  client: HubClient,
  dataDir: string,
  extra: Partial<HubPullDeps> = {},
): HubPullDeps {
  return {
    client,
    store: openAt(t, dataDir),
    // Retries without waiting: the stand-in's cuts are immediate, and the test is about the bytes.
    downloader: new Downloader({ headroomBytes: 0, backoffMs: 1, maxBackoffMs: 1, retries: 50 }),
    workRoot: join(dataDir, 'hub-downloads'),
    headroomBytes: 0,
    ...extra,
  };
}

function sha256Of(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

for (const kind of ['hf', 'ms'] as const) {
  const owner = kind === 'hf' ? 'taobao-mnn' : 'MNN';

  test(`${kind}: tiny-llm and tiny-vlm pulled whole, verified, installed with provenance; same commit again is a no-op`, async (t) => {
    const llm = repoFromDir(owner, 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm'));
    const vlm = repoFromDir(owner, 'tiny-vlm-MNN', join(modelFixturesDir, 'tiny-vlm'));
    const s = await standin(t, kind, [llm, vlm]);
    const d = scratch(t);
    const dp = deps(t, clientFor(kind, s), d);
    const progress: number[] = [];
    const first = await pullFromHub(parseHubSource(`${kind}://${owner}/tiny-llm-MNN`), dp, {
      onProgress: (p) => progress.push(p.done),
    });
    t.is(first.status, 'installed');
    t.deepEqual(first.ref, { id: 'tiny-llm-mnn', version: '1.0.0' });
    t.is(first.commit, llm.commit);
    const pkg = dp.store.get(first.ref)!;
    t.is(pkg.task, 'llm');
    for (const f of llm.files) t.is(sha256Of(join(pkg.dir, f.path)), f.sha256, f.path);
    const prov = pkg.manifest.provenance!;
    t.is(prov.hub, kind === 'hf' ? 'huggingface' : 'modelscope');
    t.is(prov.repo, `${owner}/tiny-llm-MNN`);
    t.is(prov.commit, llm.commit);
    t.is(prov.trust, 'unsigned-tofu');
    // The fleet's retained models document marks it the same way.
    t.like(packageEntry(pkg), {
      id: 'tiny-llm-mnn',
      trust: 'unsigned-tofu',
      pulledFrom: { hub: prov.hub, repo: prov.repo, commit: llm.commit },
    });
    t.deepEqual(
      prov.files.map((f) => [f.path, f.sha256]),
      llm.files.map((f) => [f.path, f.sha256]),
    );
    // HF states sha256 only for LFS files; the others are checked against their git blob id.
    const checks = new Set(prov.files.map((f) => f.check));
    t.deepEqual([...checks].sort(), kind === 'hf' ? ['git-blob-sha1', 'hub-sha256'] : ['hub-sha256']);
    t.true(progress.at(-1) === first.totalBytes && progress.length > 2);
    t.deepEqual(s.log.cdnCredentials, [], 'no credentials reach the CDN');
    t.false(existsSync(join(d, 'hub-downloads', readdirSync(join(d, 'hub-downloads'))[0] ?? 'none')));

    // A power cut after the install's commit but before the pull removed its download directory leaves it
    // behind: the next pull of that commit finds the package installed and removes it.
    const leftover = workDirFor(join(d, 'hub-downloads'), {
      ref: parseHubSource(`${kind}://${owner}/tiny-llm-MNN`),
      revision: 'main',
      commit: first.commit,
      files: [],
    });
    mkdirSync(leftover, { recursive: true });
    writeFileSync(join(leftover, 'mnn-edge.json'), '{}');
    const again = await pullFromHub(parseHubSource(`${kind}://${owner}/tiny-llm-MNN`), dp);
    t.is(again.status, 'unchanged');
    t.false(existsSync(leftover), 'the leftover download directory of the installed commit is removed');
    t.deepEqual(again.ref, first.ref);
    t.is(dp.store.list().length, 1);

    const v = await pullFromHub(
      parseHubSource(`${kind}://${owner}/tiny-vlm-MNN@${kind === 'hf' ? 'main' : 'master'}`),
      dp,
    );
    const vpkg = dp.store.get(v.ref)!;
    t.is(vpkg.task, 'vlm');
    t.true(vpkg.manifest.variants[0]!.requirements.engineFeatures!.includes('vision'));
  });

  test(`${kind}: cuts at random offsets are resumed with Range and give the same bytes`, async (t) => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i + 4 <= big.length; i += 4) big.writeUInt32LE((i * 2654435761) >>> 0, i);
    const repo = repoFromDir(owner, 'cut-repo', join(modelFixturesDir, 'tiny-llm'));
    repo.files.push(memoryFile('extra.weight', big));
    const s = await standin(t, kind, [repo]);
    const seed = Date.now() % 9973;
    let x = seed;
    const rand = () => {
      x = (x * 1103515245 + 12345) % 2147483648;
      return x / 2147483648;
    };
    // Cuts land in the big file, the graph and wherever the order puts them.
    s.cutAfter.push(...Array.from({ length: 6 }, () => Math.floor(rand() * 400_000) + 1));
    const d = scratch(t);
    const dp = deps(t, clientFor(kind, s), d);
    const r = await pullFromHub(parseHubSource(`${kind}://${owner}/cut-repo`), dp);
    t.is(s.cutAfter.length, 0, `all cuts happened (seed ${seed})`);
    const pkg = dp.store.get(r.ref)!;
    t.true(readFileSync(join(pkg.dir, 'extra.weight')).equals(big), `seed ${seed}`);
    // Every cut inside a file is followed by a Range request past 0; what the client had received but not yet
    // written when the link dropped (at most the sink's 1 MiB buffer) is all that is fetched twice.
    const cutsInside = s.log.starts.filter((x) => x > 0).length;
    t.true(cutsInside >= 1, `at least one transfer resumed (seed ${seed})`);
    const total = repo.files.reduce((a, f) => a + f.size, 0);
    t.true(
      s.log.bytes <= total + cutsInside * 1024 * 1024,
      `resumed, not restarted: served ${s.log.bytes} of ${total} after ${cutsInside} resumes (seed ${seed})`,
    );
  });

  test(`${kind}: a file whose bytes differ from the listed hash is rejected and nothing is installed`, async (t) => {
    const repo = repoFromDir(owner, 'bad-hash', join(modelFixturesDir, 'tiny-llm'));
    const graph = repo.files.find((f) => f.path === 'llm.mnn')!;
    graph.listedSha256 = createHash('sha256').update('something else').digest('hex');
    const s = await standin(t, kind, [repo]);
    const d = scratch(t);
    const dp = deps(t, clientFor(kind, s), d);
    const err = await t.throwsAsync(pullFromHub(parseHubSource(`${kind}://${owner}/bad-hash`), dp));
    t.is((err as { code?: string }).code, 'EVERIFY');
    t.regex(
      err!.message,
      /llm\.mnn has sha256 [0-9a-f]{64}, but the hub lists [0-9a-f]{64}; nothing installed/,
    );
    t.deepEqual(dp.store.list(), []);
    t.deepEqual(readdirSync(join(d, 'hub-downloads')), [], 'the download is discarded');
  });

  test(`${kind}: unknown repo → not found; gated repo without a token names the variable`, async (t) => {
    const gated = repoFromDir(owner, 'gated', join(modelFixturesDir, 'tiny-llm'), { gated: true });
    const s = await standin(t, kind, [gated]);
    const d = scratch(t);
    const missing = await t.throwsAsync(
      pullFromHub(parseHubSource(`${kind}://${owner}/nope`), deps(t, clientFor(kind, s), d)),
    );
    t.is((missing as { code?: string }).code, kind === 'hf' ? 'EHUBNOTFOUND' : 'EHUBNOTFOUND');
    t.regex(missing!.message, new RegExp(`${owner}/nope`));
    const variable = kind === 'hf' ? 'HF_TOKEN' : 'MODELSCOPE_API_TOKEN';
    const denied = await t.throwsAsync(
      pullFromHub(parseHubSource(`${kind}://${owner}/gated`), deps(t, clientFor(kind, s), join(d, 'b'))),
    );
    t.is((denied as { code?: string }).code, 'EHUBAUTH');
    t.true(denied!.message.includes(`set ${variable}`), denied!.message);
    const ok = await pullFromHub(
      parseHubSource(`${kind}://${owner}/gated`),
      deps(t, clientFor(kind, s, s.token), join(d, 'c')),
    );
    t.is(ok.status, 'installed');
    t.deepEqual(s.log.cdnCredentials, [], 'the token stays with the hub');
  });

  test(`${kind}: a repo that is not an MNN export is refused naming what is missing`, async (t) => {
    const repo: StandinRepo = {
      owner,
      name: 'pytorch-only',
      commit: 'a'.repeat(40),
      files: [
        memoryFile('README.md', Buffer.from('# hi\n')),
        memoryFile('model.safetensors', Buffer.alloc(64, 1), true),
      ],
    };
    const s = await standin(t, kind, [repo]);
    const d = scratch(t);
    const err = await t.throwsAsync(
      pullFromHub(parseHubSource(`${kind}://${owner}/pytorch-only`), deps(t, clientFor(kind, s), d)),
    );
    t.is((err as { code?: string }).code, 'EHUBNOTMNN');
    t.regex(err!.message, /is not an MNN export: it has no config\.json and no \.mnn graph/);
    t.true(s.log.bytes === 0, 'nothing downloaded');
  });

  test(`${kind}: listed names with .. or absolute paths are refused before any download`, async (t) => {
    for (const bad of ['../../etc/evil.mnn', '/etc/passwd', 'sub/../../x.mnn']) {
      const repo = repoFromDir(owner, 'hostile', join(modelFixturesDir, 'tiny-llm'));
      repo.files.push({ ...memoryFile('x', Buffer.from('x')), path: bad });
      const s = await standin(t, kind, [repo]);
      const d = scratch(t);
      const err = await t.throwsAsync(
        pullFromHub(parseHubSource(`${kind}://${owner}/hostile`), deps(t, clientFor(kind, s), d)),
      );
      t.is((err as { code?: string }).code, 'EHUBFILENAME', bad);
      t.true(err!.message.includes(JSON.stringify(bad)), err!.message);
      t.is(s.log.bytes, 0);
    }
  });

  test(`${kind}: a redirect to a plain-http host is refused`, async (t) => {
    const repo = repoFromDir(owner, 'redirected', join(modelFixturesDir, 'tiny-llm'), {
      redirectTo: 'http://cdn.example.net/blobs/x',
    });
    const s = await standin(t, kind, [repo]);
    const d = scratch(t);
    const dp = deps(t, clientFor(kind, s), d);
    const err = await t.throwsAsync(pullFromHub(parseHubSource(`${kind}://${owner}/redirected`), dp));
    t.is((err as { code?: string }).code, 'EHUBURL');
    t.regex(err!.message, /http:\/\/cdn\.example\.net is refused: hubs are reached over https only/);
    t.deepEqual(dp.store.list(), []);
    // Loopback over http is refused too unless explicitly allowed.
    const strict =
      kind === 'hf'
        ? () => new HuggingFaceClient({ endpoint: s.endpoint, policy: defaultHubHttpPolicy })
        : () => new ModelScopeClient({ endpoint: s.endpoint, policy: defaultHubHttpPolicy });
    t.throws(strict, { message: /needs models\.sources\.allowLoopbackHttp/ });
  });

  test(`${kind}: too little disk space is refused before the first byte`, async (t) => {
    const repo = repoFromDir(owner, 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm'));
    const s = await standin(t, kind, [repo]);
    const d = scratch(t);
    // A real check against this filesystem: the headroom asks for more than any disk has.
    const err = await t.throwsAsync(
      pullFromHub(
        parseHubSource(`${kind}://${owner}/tiny-llm-MNN`),
        deps(t, clientFor(kind, s), d, { headroomBytes: 2 ** 52 }),
      ),
    );
    t.is((err as { code?: string }).code, 'ENOSPC');
    t.regex(err!.message, /Not enough disk space for .*tiny-llm-MNN: \d+ bytes needed/);
    t.is(s.log.bytes, 0);
  });
}
