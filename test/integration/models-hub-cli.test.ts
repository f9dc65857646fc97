import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import test, { type ExecutionContext } from 'ava';
import { main } from '../../agent/cli/main.js';
import {
  memoryFile,
  repoFromDir,
  type Standin,
  startHuggingFaceStandin,
  startModelScopeStandin,
} from '../helpers/hub-standins.js';
import { modelFixturesDir } from '../helpers/paths.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> {
  const stdout = new PassThrough();
  const stderr = Object.assign(new PassThrough(), { isTTY: false });
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const code = await main(['models', ...args], { stdout, stderr, env: { HOME: tmpdir(), ...env } });
  return { code, stdout: out, stderr: err };
}

function setup(t: ExecutionContext, hf: Standin, ms: Standin): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'hub-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = join(dir, 'agent.json');
  writeFileSync(
    config,
    JSON.stringify({
      dataDir: join(dir, 'data'),
      models: {
        sources: { hf: { endpoint: hf.endpoint }, ms: { endpoint: ms.endpoint }, allowLoopbackHttp: true },
      },
    }),
  );
  return ['--config', config];
}

async function hubs(t: ExecutionContext) {
  const llm = () => repoFromDir('taobao-mnn', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm'));
  const vlm = () => repoFromDir('taobao-mnn', 'tiny-vlm-MNN', join(modelFixturesDir, 'tiny-vlm'));
  const omni = () => repoFromDir('taobao-mnn', 'tiny-omni-MNN', join(modelFixturesDir, 'tiny-omni-audio'));
  const hf = await startHuggingFaceStandin([llm(), vlm(), omni()]);
  const ms = await startModelScopeStandin([
    { ...llm(), owner: 'MNN' },
    { ...vlm(), owner: 'MNN' },
  ]);
  t.teardown(async () => {
    await hf.close();
    await ms.close();
  });
  return { hf, ms };
}

test('pull by hf:// and by web URL, plain progress lines, ls/show mark it unsigned, update sees a new commit', async (t) => {
  const { hf, ms } = await hubs(t);
  const flags = setup(t, hf, ms);
  const pulled = await cli(['pull', 'hf://taobao-mnn/tiny-llm-MNN', ...flags]);
  t.is(pulled.code, 0, pulled.stderr);
  const commit = hf.repos.get('taobao-mnn/tiny-llm-MNN')!.commit;
  t.regex(
    pulled.stdout,
    new RegExp(
      `^installed tiny-llm-mnn@1\\.0\\.0 from huggingface taobao-mnn/tiny-llm-MNN@${commit.slice(0, 12)} \\(llm, 509\\.2 KiB, \\d+ bytes downloaded; unsigned: trusted on first use\\)\\n$`,
    ),
  );
  // Not a terminal: whole lines, no carriage returns, ending at 100 %.
  t.false(pulled.stderr.includes('\r'));
  const lines = pulled.stderr.trim().split('\n');
  t.regex(lines.at(-1)!, /100%\s+509\.2 KiB \/ 509\.2 KiB\s+\S+.*ETA/);

  const again = await cli(['pull', 'https://huggingface.co/taobao-mnn/tiny-llm-MNN', ...flags]);
  t.is(again.code, 0, again.stderr);
  t.is(
    again.stdout,
    `tiny-llm-mnn@1.0.0 is already taobao-mnn/tiny-llm-MNN@${commit.slice(0, 12)}: nothing to do\n`,
  );

  const listed = (await cli(['ls', ...flags])).stdout;
  t.regex(listed, /tiny-llm-mnn\s+1\.0\.0\s+llm\s+509\.2 KiB\s+derived,unsigned/);
  t.regex(listed, /\nunsigned: pulled from a model hub, no signature \(trust on first use\)\n$/);
  const asJson = JSON.parse((await cli(['ls', '--json', ...flags])).stdout) as Array<Record<string, unknown>>;
  t.like(asJson[0], {
    id: 'tiny-llm-mnn',
    trust: 'unsigned-tofu',
    pulledFrom: `huggingface taobao-mnn/tiny-llm-MNN@${commit}`,
  });
  const shown = (await cli(['show', 'tiny-llm-mnn', ...flags])).stdout;
  t.true(shown.includes(`from huggingface taobao-mnn/tiny-llm-MNN@main = commit ${commit}`), shown);
  t.true(shown.includes('unsigned: trusted on first use'));

  t.regex(
    (await cli(['update', 'tiny-llm-mnn', ...flags])).stdout,
    /is up to date: taobao-mnn\/tiny-llm-MNN@main is still/,
  );
  // The publisher pushes a new commit: a README and a changed tokenizer.
  const repo = hf.repos.get('taobao-mnn/tiny-llm-MNN')!;
  repo.files.push(memoryFile('README.md', Buffer.from('# tiny\n')));
  const tok = repo.files.findIndex((f) => f.path === 'tokenizer.txt');
  repo.files[tok] = memoryFile('tokenizer.txt', Buffer.from('changed tokenizer\n'));
  repo.commit = 'c'.repeat(40);
  const update = await cli(['update', 'tiny-llm-mnn', ...flags]);
  t.is(update.code, 0, update.stderr);
  t.regex(update.stdout, new RegExp(`moved: ${commit.slice(0, 12)} → cccccccccccc`));
  t.regex(update.stdout, /added {4}README\.md/);
  t.regex(update.stdout, /changed {2}tokenizer\.txt/);
  t.regex(update.stdout, /mnn-edge models pull hf:\/\/taobao-mnn\/tiny-llm-MNN@main --id tiny-llm-mnn/);
  const newer = await cli(['pull', 'hf://taobao-mnn/tiny-llm-MNN@main', '--id', 'tiny-llm-mnn', ...flags]);
  t.regex(newer.stdout, /^installed tiny-llm-mnn@1\.0\.1 /);
});

test('pull by ms:// and ModelScope web URL; errors are specific', async (t) => {
  const { hf, ms } = await hubs(t);
  const flags = setup(t, hf, ms);
  const pulled = await cli(['pull', 'https://modelscope.cn/models/MNN/tiny-vlm-MNN', ...flags]);
  t.is(pulled.code, 0, pulled.stderr);
  t.regex(
    pulled.stdout,
    /^installed tiny-vlm-mnn@1\.0\.0 from modelscope MNN\/tiny-vlm-MNN@[0-9a-f]{12} \(vlm, /,
  );
  const missing = await cli(['pull', 'ms://MNN/does-not-exist', ...flags]);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /ModelScope has no .*MNN\/does-not-exist/);
  const bad = await cli(['pull', 'hf://taobao-mnn', ...flags]);
  t.not(bad.code, 0);
});

test('search lists MNN exports with size, task and quantisation; recommend ranks them per role with reasons', async (t) => {
  const { hf, ms } = await hubs(t);
  const flags = setup(t, hf, ms);
  const found = await cli(['search', 'tiny', ...flags]);
  t.is(found.code, 0, found.stderr);
  t.regex(found.stdout, /^MODEL\s+SIZE\s+TASK\s+QUANT\s+NOTE\n/);
  t.regex(found.stdout, /hf:\/\/taobao-mnn\/tiny-llm-MNN\s+509\.2 KiB\s+llm \(text\)/);
  t.regex(found.stdout, /hf:\/\/taobao-mnn\/tiny-vlm-MNN\s+720\.7 KiB\s+vlm \(vision\)/);
  t.regex(found.stdout, /hf:\/\/taobao-mnn\/tiny-omni-MNN\s+674\.5 KiB\s+omni \(audio\)/);
  const msFound = await cli(['search', 'vlm', '--source', 'ms', ...flags]);
  t.regex(msFound.stdout, /ms:\/\/MNN\/tiny-vlm-MNN/);
  t.false(msFound.stdout.includes('tiny-llm'));

  const rec = await cli(['recommend', ...flags]);
  t.is(rec.code, 0, rec.stderr);
  t.regex(rec.stdout, /^board .+: budget \d+ MiB = \d+ % of \d+ MiB RAM/);
  t.regex(rec.stdout, /voice\.llm:\n {2}★ hf:\/\/taobao-mnn\/tiny-llm-MNN\s+[\d.]+ MiB on \w+/);
  t.regex(rec.stdout, /fits: [\d.]+ MiB with a 2048-token KV cache, budget \d+ MiB/);
  t.regex(rec.stdout, /vision\.vlm:\n {2}★ hf:\/\/taobao-mnn\/tiny-vlm-MNN/);
  t.regex(rec.stdout, /voice\.omni:\n {2}★ hf:\/\/taobao-mnn\/tiny-omni-MNN/);
  t.regex(rec.stdout, /voice\.asr:\n {2}no taobao-mnn export on huggingface for this role/);
  t.regex(rec.stdout, /unsigned: a pull is trusted on first use/);
  const json = JSON.parse((await cli(['recommend', '--role', 'voice.llm', '--json', ...flags])).stdout) as {
    recommendations: { role: string; repo: string; fits: boolean; reasons: string[] }[];
  };
  t.deepEqual(
    json.recommendations.map((r) => [r.role, r.repo, r.fits]),
    [['voice.llm', 'taobao-mnn/tiny-llm-MNN', true]],
  );
});

test('a gated repo without a token names HF_TOKEN; with HF_TOKEN it pulls', async (t) => {
  const { hf, ms } = await hubs(t);
  const flags = setup(t, hf, ms);
  hf.repos.get('taobao-mnn/tiny-llm-MNN')!.gated = true;
  const denied = await cli(['pull', 'hf://taobao-mnn/tiny-llm-MNN', ...flags]);
  t.is(denied.code, 1);
  t.regex(denied.stderr, /needs a token \(gated or private, or it does not exist\): set HF_TOKEN/);
  const ok = await cli(['pull', 'hf://taobao-mnn/tiny-llm-MNN', ...flags], { HF_TOKEN: hf.token });
  t.is(ok.code, 0, ok.stderr);
});
