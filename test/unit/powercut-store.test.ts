// The power-cut run's verdict on the model store and the model writes (scripts/system-image/powercut-store.ts),
// on facts shaped as the guest reports them: a half package, an orphan, leftovers, and acknowledged writes lost.
import { createHash } from 'node:crypto';
import test from 'ava';
import {
  judgeModels,
  judgeStore,
  parseStoreFacts,
  type StoreFacts,
} from '../../scripts/system-image/powercut-store.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const manifest = (files: Record<string, string>) =>
  JSON.stringify({
    id: 'pc-ota',
    variants: [
      {
        name: 'cpu',
        files: Object.entries(files).map(([path, c]) => ({ path, length: c.length, sha256: sha(c) })),
      },
    ],
  });

function facts(onDisk: Record<string, string>, rows: StoreFacts['rows']): StoreFacts {
  return {
    rows,
    files: new Map(Object.entries(onDisk).map(([p, c]) => [p, { size: c.length, sha256: sha(c) }])),
    debris: { 'models/.staging': [], 'hub-downloads': [] },
  };
}

const pkg = { 'llm.mnn': 'graph', 'llm.mnn.weight': 'weights!' };
const row = { id: 'pc-ota', version: '1.0.1', manifest: manifest(pkg) };
const whole = {
  'pc-ota/1.0.1/mnn-edge.json': '{}',
  'pc-ota/1.0.1/llm.mnn': 'graph',
  'pc-ota/1.0.1/llm.mnn.weight': 'weights!',
};

test('a whole package passes; a short file, another hash or a missing file is a torn package', (t) => {
  t.deepEqual(judgeStore(facts(whole, [row])), { packages: 1, torn: [], orphans: [], debris: [] });
  const short = judgeStore(facts({ ...whole, 'pc-ota/1.0.1/llm.mnn.weight': 'weig' }, [row]));
  t.deepEqual(short.torn, ['pc-ota@1.0.1: llm.mnn.weight has 4 bytes, not 8']);
  const other = judgeStore(facts({ ...whole, 'pc-ota/1.0.1/llm.mnn': 'GRAPH' }, [row]));
  t.deepEqual(other.torn, ['pc-ota@1.0.1: llm.mnn has another sha256']);
  const { 'pc-ota/1.0.1/mnn-edge.json': _, ...noManifest } = whole;
  t.deepEqual(judgeStore(facts(noManifest, [row])).torn, ['pc-ota@1.0.1: mnn-edge.json missing']);
});

test('a directory without its row is an orphan; files in .staging are not packages but are leftovers', (t) => {
  const f = facts({ ...whole, 'pc-hub/1.0.3/llm.mnn': 'graph', '.staging/abc/llm.mnn': 'gr' }, [row]);
  f.debris['models/.staging'] = ['abc'];
  const v = judgeStore(f);
  t.deepEqual(v.orphans, ['pc-hub/1.0.3']);
  t.deepEqual(v.debris, ['models/.staging/abc']);
  t.deepEqual(v.torn, []);
});

test('the guest report parses: rows as sqlite3 -json prints them, sizes and hashes, debris per directory', (t) => {
  const out = [
    '@rows',
    JSON.stringify([row]),
    '@files',
    `5 ${sha('graph')}  ./pc-ota/1.0.1/llm.mnn`,
    `8 ${sha('weights!')}  ./pc-ota/1.0.1/llm.mnn.weight`,
    `2 ${sha('{}')}  ./pc-ota/1.0.1/mnn-edge.json`,
    '@debris models/.staging',
    '@debris ota/staging',
    'deadbeef.tar.part',
    '',
  ].join('\n');
  const f = parseStoreFacts(out);
  t.is(f.rows.length, 1);
  t.deepEqual(f.files.get('pc-ota/1.0.1/llm.mnn'), { size: 5, sha256: sha('graph') });
  t.deepEqual(f.debris, { 'models/.staging': [], 'ota/staging': ['deadbeef.tar.part'] });
  t.deepEqual(judgeStore(f).torn, []);
  t.deepEqual(parseStoreFacts('@rows\n@files\n').rows, []);
});

const ota = { jobId: 'pc-1', version: '1.0.1', states: ['queued', 'downloading'] };
const store = { packages: 1, torn: [], orphans: [], debris: [] };

test('an OTA job cut while downloading that resumes to success, and a pull that resumes, are clean', (t) => {
  const m = judgeModels(
    { ota, pull: { last: { state: 'running', phase: 'downloading', doneBytes: 100, totalBytes: 500 } } },
    {
      otaFinal: { state: 'succeeded' },
      pull: { state: 'installed', model: 'pc-ota@1.0.1', fetchedBytes: 400, totalBytes: 500 },
    },
    store,
    [row],
  );
  t.deepEqual(m.lost, []);
  t.deepEqual(m.unclean, []);
  t.is(m.ota.atCut, 'downloading');
  t.is(m.pull.atCut, 'running/downloading 100/500 B');
});

test('a success reported before the cut and gone after it is a lost acknowledged write', (t) => {
  const m = judgeModels(
    {
      ota: { ...ota, states: ['queued', 'succeeded'] },
      pull: {
        last: { state: 'installed', phase: 'done', doneBytes: 500, totalBytes: 500, model: 'pc-hub@1.0.2' },
      },
    },
    { otaFinal: { state: 'succeeded' }, pull: { state: 'installed', totalBytes: 500 } },
    store,
    [],
  );
  t.is(m.lost.length, 2);
  t.regex(m.lost[0]!, /OTA pc-ota@1\.0\.1 reported succeeded before the cut and is not installed/);
  t.regex(m.lost[1]!, /the pull installed pc-hub@1\.0\.2 before the cut, and after the boot it installed/);
  t.regex(m.unclean[0]!, /succeeded but pc-ota@1\.0\.1 is not installed/);
});

test('a job that fails after the boot, or a pull that fails when asked again, did not end cleanly', (t) => {
  const m = judgeModels(
    { ota, pull: { refused: 'HTTP 409: busy' } },
    {
      otaFinal: { state: 'failed', message: 'download: hash mismatch' },
      pull: { state: 'failed', totalBytes: 0, error: { message: 'EVERIFY' } },
    },
    store,
    [row],
  );
  t.deepEqual(m.lost, []);
  t.is(m.unclean.length, 2);
  t.is(m.pull.atCut, 'refused (HTTP 409: busy)');
});

test("another commit's partial download is kept for a resume; this pull's own is debris once it ended", (t) => {
  const commit = 'ab'.repeat(20);
  const f = facts(whole, [row]);
  f.debris['hub-downloads'] = [
    'huggingface-taobao-mnn-tiny-llm-MNN-2af75b8469718185',
    `huggingface-taobao-mnn-tiny-llm-MNN-${commit.slice(0, 16)}`,
  ];
  const v = judgeStore(f, commit);
  t.deepEqual(v.debris, [`hub-downloads/huggingface-taobao-mnn-tiny-llm-MNN-${commit.slice(0, 16)}`]);
  t.deepEqual(v.keptPartials, ['hub-downloads/huggingface-taobao-mnn-tiny-llm-MNN-2af75b8469718185']);
});
