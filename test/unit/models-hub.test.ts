import test from 'ava';
import { pullProgressLine, RateMeter } from '../../agent/cli/common/pull-progress.js';
import { type HubCandidate, recommend } from '../../agent/plan/recommend.js';
import { defaultPlanPolicy } from '../../agent/plan/types.js';
import { checkListing, describeExport, requireMnnExport } from '../../models/hub/export-check.js';
import { checkHubUrl, defaultHubHttpPolicy } from '../../models/hub/http.js';
import { formatHubSource, isHubSource, parseHubSource } from '../../models/hub/source.js';
import type { HubSnapshot } from '../../models/hub/types.js';
import { diffSnapshot } from '../../models/hub/update.js';
import { boards } from './plan-fixtures.js';

const MiB = 1024 * 1024;

test('hub sources: schemes, revisions and the hubs web URLs', (t) => {
  t.deepEqual(parseHubSource('hf://taobao-mnn/Qwen3-0.6B-MNN'), {
    hub: 'huggingface',
    owner: 'taobao-mnn',
    name: 'Qwen3-0.6B-MNN',
  });
  t.deepEqual(parseHubSource('ms://MNN/Qwen2.5-VL-3B-Instruct-MNN@v1.0'), {
    hub: 'modelscope',
    owner: 'MNN',
    name: 'Qwen2.5-VL-3B-Instruct-MNN',
    revision: 'v1.0',
  });
  t.deepEqual(parseHubSource('https://huggingface.co/taobao-mnn/Qwen3-0.6B-MNN/tree/refs%2Fpr%2F1'), {
    hub: 'huggingface',
    owner: 'taobao-mnn',
    name: 'Qwen3-0.6B-MNN',
    revision: 'refs/pr/1',
  });
  t.deepEqual(parseHubSource('https://www.modelscope.cn/models/MNN/Qwen3-0.6B-MNN/files?Revision=master'), {
    hub: 'modelscope',
    owner: 'MNN',
    name: 'Qwen3-0.6B-MNN',
    revision: 'master',
  });
  t.is(formatHubSource(parseHubSource('hf://a/b@main')), 'hf://a/b@main');
  t.true(isHubSource('https://hf.co/a/b'));
  t.false(isHubSource('https://updates.example.com/pkg.tar'));
  for (const bad of ['hf://only-owner', 'hf://a/b@../x', 'hf://../b', 'https://example.com/a/b'])
    t.throws(() => parseHubSource(bad), { code: 'EUSAGE' } as never, bad);
});

test('hub URLs: https only; plain http only to loopback and only when allowed; no credentials in URLs', (t) => {
  const allow = { ...defaultHubHttpPolicy, allowLoopbackHttp: true };
  t.is(checkHubUrl('https://huggingface.co/x', defaultHubHttpPolicy, 'x').host, 'huggingface.co');
  t.throws(() => checkHubUrl('http://127.0.0.1:1/x', defaultHubHttpPolicy, 'Redirect to'), {
    message: /needs models\.sources\.allowLoopbackHttp/,
  });
  t.is(checkHubUrl('http://127.0.0.1:1/x', allow, 'x').port, '1');
  t.is(checkHubUrl('http://[::1]:1/x', allow, 'x').port, '1');
  t.throws(() => checkHubUrl('http://10.0.0.1/x', allow, 'Redirect to'), {
    message: /Redirect to http:\/\/10\.0\.0\.1 is refused/,
  });
  t.throws(() => checkHubUrl('http://127.0.0.1.evil.net/x', allow, 'x'));
  t.throws(() => checkHubUrl('ftp://h/x', allow, 'x'));
  t.throws(() => checkHubUrl('https://user:pw@h/x', allow, 'x'), { message: /credentials/ });
});

function snapshot(paths: [string, number, string?][]): HubSnapshot {
  return {
    ref: { hub: 'huggingface', owner: 'o', name: 'n' },
    revision: 'main',
    commit: 'a'.repeat(40),
    files: paths.map(([path, size, sha256]) => ({ path, size, ...(sha256 ? { sha256 } : {}) })),
  };
}

test('listings: unsafe names refused, git metadata skipped, an MNN export required', (t) => {
  const ok = checkListing(
    snapshot([
      ['config.json', 10],
      ['llm.mnn', 100],
      ['.gitattributes', 5],
      ['docs/a b.png', 3],
    ]),
  );
  t.deepEqual(
    ok.files.map((f) => f.path),
    ['config.json', 'llm.mnn'],
  );
  t.deepEqual(ok.skipped, ['.gitattributes', 'docs/a b.png']);
  for (const bad of ['../x', 'a/../../x', '/abs', 'C:/win', 'a\\b', 'a//b', './x'])
    t.throws(() => checkListing(snapshot([[bad, 1]])), { code: 'EHUBFILENAME' } as never, bad);
  t.throws(() => checkListing(snapshot([['a', -1]])), { code: 'EHUBRESPONSE' } as never);
  const noConfig = snapshot([['llm.mnn', 1]]);
  t.throws(() => requireMnnExport(noConfig, noConfig.files), {
    message: /it has no config\.json \(it has llm\.mnn\)/,
  });
  const onlyTorch = snapshot([['model.safetensors', 1]]);
  t.throws(() => requireMnnExport(onlyTorch, onlyTorch.files), {
    message: /is not an MNN export: it has no config\.json and no \.mnn graph/,
  });
});

test('export kinds from MNN export configs: text, vision, audio, talker', (t) => {
  const files = (names: string[]) => names.map((path) => ({ path, size: 1000 }));
  const j = (v: unknown) => Buffer.from(JSON.stringify(v));
  t.is(
    describeExport(
      'o/Qwen3-0.6B-MNN',
      files(['config.json', 'llm.mnn']),
      j({ llm_model: 'llm.mnn' }),
      undefined,
    ).kind,
    'text',
  );
  t.is(describeExport('o/vl', files(['config.json', 'llm.mnn']), j({}), j({ is_visual: true })).task, 'vlm');
  t.is(describeExport('o/a', files(['config.json', 'llm.mnn', 'audio.mnn']), j({}), j({})).kind, 'audio');
  const talker = describeExport(
    'o/Qwen2.5-Omni-3B-MNN',
    files(['config.json', 'llm.mnn', 'talker.mnn']),
    j({}),
    j({}),
  );
  t.deepEqual([talker.kind, talker.task], ['talker', 'omni']);
  const q = describeExport(
    'o/Qwen3-4B-int8-MNN',
    files(['config.json', 'llm.mnn', 'llm.mnn.weight']),
    j({ backend_type: 'qnn' }),
    j({ hidden_size: 8, layer_nums: 2 }),
  );
  t.deepEqual([q.quant, q.backend, q.weightBytes, q.hiddenSize, q.layers], ['int8', 'qnn', 2000, 8, 2]);
});

test('update diff: added, changed by sha256 or git id, removed', (t) => {
  const prov = {
    hub: 'huggingface' as const,
    repo: 'o/n',
    revision: 'main',
    commit: 'a'.repeat(40),
    endpoint: 'https://huggingface.co',
    pulledAt: '2026-12-01T00:00:00Z',
    trust: 'unsigned-tofu' as const,
    files: [
      {
        path: 'config.json',
        sha256: '1'.repeat(64),
        check: 'git-blob-sha1' as const,
        gitOid: 'b'.repeat(40),
      },
      { path: 'llm.mnn', sha256: '2'.repeat(64), check: 'hub-sha256' as const },
      { path: 'old.txt', sha256: '3'.repeat(64), check: 'computed' as const },
    ],
  };
  const next: HubSnapshot = {
    ref: { hub: 'huggingface', owner: 'o', name: 'n' },
    revision: 'main',
    commit: 'c'.repeat(40),
    files: [
      { path: 'config.json', size: 10, gitOid: 'b'.repeat(40) },
      { path: 'llm.mnn', size: 500, sha256: '4'.repeat(64) },
      { path: 'new.weight', size: 700, sha256: '5'.repeat(64) },
    ],
  };
  const d = diffSnapshot(prov, next);
  t.true(d.newer);
  t.deepEqual(
    d.added.map((f) => f.path),
    ['new.weight'],
  );
  t.deepEqual(
    d.changed.map((f) => f.path),
    ['llm.mnn'],
  );
  t.deepEqual(d.removed, ['old.txt']);
  t.is(d.downloadBytes, 1200);
});

const hubModel = (repo: string, weightMiB: number, extra: Partial<HubCandidate> = {}): HubCandidate => ({
  repo,
  kind: 'llm',
  builtFor: 'cpu',
  weightBytes: weightMiB * MiB,
  kvBytesPerToken: 28 * 1024,
  ...extra,
});

test('recommend: fits the budget with its KV cache, usable backend only, speed from priors, per role, with reasons', (t) => {
  const board = boards.qcs9075;
  const input = {
    board,
    policy: defaultPlanPolicy,
    probes: [],
    engineVersion: '3.6.1',
    contextTokens: { 'voice.llm': 2048, 'voice.omni': 2048, 'vision.vlm': 2048, 'voice.asr': 512 },
    candidates: [
      hubModel('o/small', 400),
      hubModel('o/medium', 1400),
      hubModel('o/huge', 40_000),
      hubModel('o/vl', 1400, { kind: 'vlm' }),
    ],
  };
  const r = recommend(input);
  const llm = r.filter((x) => x.role === 'voice.llm');
  t.deepEqual(
    llm.map((x) => [x.repo, x.fits]),
    [
      ['o/medium', true],
      ['o/small', true],
      ['o/huge', false],
    ],
  );
  // 1400 MiB on the CPU prior: 9.8 tok/s, above the 8 tok/s a voice reply needs: the biggest that keeps up.
  t.is(llm[0]!.backend, 'cpu');
  t.is(Math.round(llm[0]!.decodeTokPerSec!), 10);
  t.regex(
    llm[0]!.reasons.join('\n'),
    /fits: \d+ MiB with a 2048-token KV cache, budget \d+ MiB\n.*runs on cpu\n.*prior \(qcs9075/,
  );
  t.regex(llm[2]!.reasons[0]!, /too big: needs \d+ MiB with a 2048-token KV cache/);
  t.deepEqual(
    r.filter((x) => x.role === 'vision.vlm').map((x) => x.repo),
    ['o/vl'],
  );

  // A QNN build is recommended only where the NPU is usable.
  const npu = [hubModel('o/qnn-build', 800, { builtFor: 'qnn' })];
  const onQcs = recommend({ ...input, candidates: npu }, ['voice.llm']);
  t.is(onQcs[0]!.backend, 'npu');
  t.true(onQcs[0]!.fits);
  const onK1 = recommend({ ...input, board: boards.k1, candidates: npu }, ['voice.llm']);
  t.false(onK1[0]!.fits);
  t.regex(onK1[0]!.reasons[0]!, /no usable backend on this board for a qnn build/);
  // Slower than the floor: still listed, after those that keep up, with the reason.
  const slow = recommend({ ...input, candidates: [hubModel('o/slow', 4000), hubModel('o/ok', 1000)] }, [
    'voice.llm',
  ]);
  t.deepEqual(
    slow.map((x) => x.repo),
    ['o/ok', 'o/slow'],
  );
  t.regex(slow[1]!.reasons.join('\n'), /below the 8 tok\/s a voice\.llm reply needs/);
});

test('progress line: bytes, rate, ETA and file; the rate meter restarts when progress goes back', (t) => {
  const line = pullProgressLine(
    { phase: 'downloading', file: 'llm.mnn', fileIndex: 2, fileCount: 6, done: 50 * MiB, total: 100 * MiB },
    5 * MiB,
    10,
  );
  t.is(line, '[#####.....]  50%  50.0 MiB / 100.0 MiB  5.0 MiB/s  ETA 10s  llm.mnn (2/6)');
  const m = new RateMeter(5000);
  t.is(m.add(0, 0), undefined);
  t.is(m.add(1000, 1000), 1000);
  t.is(m.add(2000, 500), undefined);
});
