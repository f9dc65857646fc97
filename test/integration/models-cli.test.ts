import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import test, { type ExecutionContext } from 'ava';
import { parseByteSize, progressLine } from '../../agent/cli/commands/models.js';
import { formatBytes } from '../../agent/cli/common/format.js';
import { main } from '../../agent/cli/main.js';
import { modelFixturesDir } from '../helpers/paths.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], dataDir?: string, tty = false): Promise<Result> {
  const stdout = new PassThrough();
  const stderr = Object.assign(new PassThrough(), { isTTY: tty });
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  // No /etc/mnn-edge/agent.json influence: an explicit empty data dir and a clean environment.
  const code = await main(['models', ...args, ...(dataDir ? ['--data-dir', dataDir] : [])], {
    stdout,
    stderr,
    env: { HOME: tmpdir() },
  });
  return { code, stdout: out, stderr: err };
}

function scratch(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'models-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('import, ls, show, keep, rm and gc through the CLI', async (t) => {
  const d = scratch(t);
  const tiny = join(modelFixturesDir, 'tiny-llm');
  t.deepEqual(await cli(['ls'], d), {
    code: 0,
    stdout: `no models installed in ${join(d, 'models')}\n`,
    stderr: '',
  });
  const imported = await cli(['import', tiny, '--version', '1.0.0'], d);
  t.is(imported.stdout, 'installed tiny-llm@1.0.0 (llm, 509.2 KiB, manifest derived from the MNN export)\n');
  t.is(imported.stderr, '', 'no progress bar when stderr is not a terminal');
  await cli(['import', tiny, '--version', '1.1.0'], d);
  t.is(
    (await cli(['ls'], d)).stdout,
    'ID        VERSION  TASK  SIZE       FLAGS    LAST USED\n' +
      'tiny-llm  1.0.0    llm   509.2 KiB  derived  -\n' +
      'tiny-llm  1.1.0    llm   509.2 KiB  derived  -\n',
  );
  const shown = await cli(['show', 'tiny-llm@1.1.0', '--json'], d);
  const [pkg] = JSON.parse(shown.stdout) as { manifest: { variants: { name: string }[] } }[];
  t.is(pkg!.manifest.variants[0]!.name, 'cpu-fp32');
  t.is((await cli(['keep', 'tiny-llm@1.0.0'], d)).stdout, 'tiny-llm@1.0.0 is kept: gc will not remove it\n');
  t.deepEqual(JSON.parse((await cli(['gc', '--json'], d)).stdout), {
    removed: [],
    freedBytes: 0,
    totalBytes: 2 * 521385,
    overBudgetBytes: 0,
  });
  t.deepEqual(await cli(['rm', 'tiny-llm@1.0.0'], d), {
    code: 1,
    stdout: '',
    stderr: 'mnn-edge models: tiny-llm@1.0.0 is kept by an operator; unkeep it first or force the removal\n',
  });
  t.is((await cli(['rm', 'tiny-llm@1.0.0', '--force'], d)).stdout, 'removed tiny-llm@1.0.0\n');
  const ls = JSON.parse((await cli(['ls', '--json'], d)).stdout) as { version: string }[];
  t.deepEqual(
    ls.map((p) => p.version),
    ['1.1.0'],
  );
});

test('import draws a progress bar on a terminal and clears it at the end', async (t) => {
  const d = scratch(t);
  const r = await cli(['import', join(modelFixturesDir, 'tiny-llm'), '--version', '1.0.0'], d, true);
  t.is(r.code, 0);
  t.true(
    r.stderr.includes('\r\x1b[2K[##############################] 100%  509.2 KiB / 509.2 KiB  tokenizer.txt'),
  );
  t.true(r.stderr.endsWith('\r\x1b[2K'));
});

test('inspect prints the interface, op histogram and backend gaps', async (t) => {
  const r = await cli(['inspect', join(modelFixturesDir, 'tiny-llm-int4', 'llm.mnn')]);
  t.is(r.code, 0);
  t.true(r.stdout.includes('  input_ids  float32 [3,1,64]\n'));
  t.true(r.stdout.includes('  Attention            2\n'));
  t.true(r.stdout.includes('external weights: 84.3 KiB in llm.mnn.weight (15 ops)\n'));
  t.true(r.stdout.includes('weight quantisation: 4-bit × 15 (block 32 × 15)\n'));
  t.true(r.stdout.includes('  nnapi     falls back to CPU for Attention\n'));
  const json = JSON.parse(
    (await cli(['inspect', join(modelFixturesDir, 'tiny-vlm', 'visual.mnn'), '--json'])).stdout,
  );
  t.deepEqual(json.outputs, [{ name: 'image_embeds' }]);
});

test('usage errors and bad input exit with clear messages', async (t) => {
  const d = scratch(t);
  const none = await cli([], d);
  t.is(none.code, 2);
  t.true(
    none.stderr.startsWith('mnn-edge models: missing subcommand\nUsage: mnn-edge models <ls | show <id>'),
  );
  t.is(
    (await cli(['frobnicate'], d)).stderr.split('\n')[0],
    "mnn-edge models: unknown subcommand 'frobnicate'",
  );
  t.is(
    (await cli(['keep', 'tiny-llm'], d)).stderr,
    'mnn-edge models: Expected <id>@<version> (e.g. qwen2.5-0.5b@1.0.0) but received "tiny-llm"\n',
  );
  t.is(
    (await cli(['import', join(d, 'nope.tar')], d)).stderr,
    `mnn-edge models: Cannot import ${join(d, 'nope.tar')}: ENOENT: no such file or directory, stat '${join(d, 'nope.tar')}'\n`,
  );
  t.is(
    (await cli(['gc', '--budget', 'lots'], d)).stderr.split('\n')[0],
    "mnn-edge models: --budget expects a size such as 500M or 8G, got 'lots'",
  );
  t.is((await cli(['show', 'ghost'], d)).stderr, 'mnn-edge models: Model ghost is not installed\n');
  // The store works on a hidden staging copy; the message names the directory the user typed.
  const empty = join(d, 'not-a-model');
  mkdirSync(empty);
  writeFileSync(join(empty, 'README.txt'), 'hello');
  t.is(
    (await cli(['import', empty], d)).stderr,
    `mnn-edge models: Cannot derive a manifest for ${empty}: it has no .mnn file and no mnn-edge.json\n`,
  );
});

test('helpers: sizes and the progress bar', (t) => {
  t.is(parseByteSize('500M'), 500 * 1024 ** 2);
  t.is(parseByteSize('1.5GiB'), 1.5 * 1024 ** 3);
  t.is(parseByteSize('1234'), 1234);
  t.is(formatBytes(1536), '1.5 KiB');
  t.is(
    progressLine({ source: 's', file: 'llm.mnn', bytesDone: 512, bytesTotal: 1024 }, 10),
    '[#####.....]  50%  512 B / 1.0 KiB  llm.mnn',
  );
  t.is(progressLine({ source: 's', file: 'a.bin', bytesDone: 2048 }), '2.0 KiB  a.bin');
});
