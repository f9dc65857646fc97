import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import test from 'ava';
import { main } from '../../agent/cli/main.js';
import { PINNED_MNN_COMMIT } from '../../agent/operator/engine-build/spec.js';
import { repoRoot, socFixturesDir } from '../helpers/paths.js';

function io(env: Record<string, string> = {}) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  return { io: { stdout, stderr, env }, out: () => out, err: () => err };
}

const rock5b = join(socFixturesDir, 'rockchip-rk3588-rock5b');

test('engine build --dry-run: the board plan and every command, without running any', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'engine-cli-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const a = io();
  const code = await main(
    [
      'engine',
      'build',
      '--dry-run',
      '--root',
      rock5b,
      '--work',
      work,
      '--prefix',
      join(work, 'mnn'),
      '--jobs',
      '3',
      '--addon-build',
      join(work, 'addon'),
    ],
    a.io,
  );
  t.is(code, 0, a.err());
  const out = a.out();
  t.regex(out, /^MNN backends: cpu, opencl\n/);
  t.regex(out, /OpenCL: Mali-G610 GPU \(arm-mali\)/);
  t.regex(out, new RegExp(`git -C ${join(work, 'MNN')} fetch --depth 1 origin ${PINNED_MNN_COMMIT}`));
  t.regex(out, /-DMNN_OPENCL=ON/);
  t.regex(out, new RegExp(`cmake --build ${join(work, 'build')} --parallel 3`));
  t.regex(
    out,
    new RegExp(
      `MNN_ROOT=${join(work, 'mnn')} \\S+ ${join(repoRoot, 'engine', 'scripts', 'build-engine.mjs')} --jobs 3 --out ${join(work, 'addon')}$`,
      'm',
    ),
  );
  t.false(out.includes('Running:'), 'nothing ran');
});

test('engine build --dry-run --json, with a given source tree and a QNN SDK from the environment', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'engine-cli-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const src = join(work, 'MNN-src');
  mkdirSync(join(src, 'transformers', 'llm', 'engine'), { recursive: true });
  writeFileSync(join(src, 'CMakeLists.txt'), 'project(MNN)\n');
  const qnn = join(work, 'qairt');
  mkdirSync(join(qnn, 'include', 'QNN'), { recursive: true });
  const a = io({ QNN_SDK_ROOT: qnn });
  const code = await main(
    [
      'engine',
      'build',
      '--dry-run',
      '--json',
      '--src',
      src,
      '--root',
      join(socFixturesDir, 'qcom-qcs6490-rb3gen2'),
    ],
    a.io,
  );
  t.is(code, 0, a.err());
  const doc = JSON.parse(a.out()) as {
    plan: { backends: string[]; cmake: [string, string][] };
    steps: { command: string[] }[];
  };
  t.deepEqual(doc.plan.backends, ['opencl', 'qnn']);
  t.true(doc.plan.cmake.some(([k, v]) => k === 'QNN_SDK_ROOT' && v === qnn));
  t.false(
    doc.steps.some((s) => s.command[0] === 'git'),
    'a given tree is not fetched',
  );
  t.deepEqual(doc.steps[0]!.command.slice(0, 3), ['cmake', '-S', src]);
});

test('engine build: bad input is a usage error that says what is wrong', async (t) => {
  const cases: [string[], RegExp][] = [
    [['engine'], /missing subcommand \(build\)/],
    [['engine', 'make'], /unknown subcommand 'make'/],
    [['engine', 'build', '--src', '/nonexistent', '--dry-run'], /--src \/nonexistent does not exist/],
    [['engine', 'build', '--src', repoRoot, '--ref', 'abc1234'], /pass one of them/],
    [
      ['engine', 'build', '--src', join(repoRoot, 'docs'), '--dry-run'],
      /has no CMakeLists.txt: not an MNN source tree/,
    ],
    [['engine', 'build', '--jobs', '0', '--dry-run'], /--jobs needs a positive integer, got 0/],
    [['engine', 'build', '--ref', 'a b', '--dry-run'], /--ref a b is not a commit, tag or branch name/],
    [
      ['engine', 'build', '--with', 'metal', '--dry-run'],
      /--with: unknown backend or tool 'metal' \(one of opencl, vulkan, cuda, qnn, hexagon, converter\)/,
    ],
    [['engine', 'build', '--with', 'vulkan', '--without', 'vulkan'], /--with and --without both name vulkan/],
  ];
  for (const [argv, message] of cases) {
    const a = io();
    t.is(await main(argv, a.io), 2, argv.join(' '));
    t.regex(a.err(), message, argv.join(' '));
  }
});

test('engine build refuses a prefix it cannot create before building anything', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'engine-cli-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  writeFileSync(join(work, 'file'), '');
  const a = io();
  const prefix = join(work, 'file', 'mnn');
  t.is(await main(['engine', 'build', '--root', rock5b, '--work', work, '--prefix', prefix], a.io), 1);
  t.true(
    a.err().endsWith(`cannot install into ${prefix}: ${join(work, 'file')} is not a directory\n`),
    a.err(),
  );
  t.regex(a.out(), /^MNN backends: cpu, opencl/, 'the plan is shown first');
  t.false(a.out().includes('[1/'), 'no step ran');
});
