import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import test from 'ava';
import { parseExpiry } from '../../agent/cli/commands/ota.js';
import { main } from '../../agent/cli/main.js';
import type { SignedTargets } from '../../ota/trust/targets.js';
import { trustPolicyFromConfig, verifyTargets } from '../../ota/trust/trust.js';
import { modelFixturesDir } from '../helpers/paths.js';

function sink() {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  return { stream, text: () => text };
}

async function cli(argv: string[]) {
  const out = sink();
  const err = sink();
  const code = await main(argv, { stdout: out.stream, stderr: err.stream, env: {} });
  return { code, out: out.text(), err: err.text() };
}

test('keygen → pack --targets → sign --bump: the result verifies with the printed public key', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ota-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const kg = await cli(['ota', 'keygen', '--out', dir, '--name', 'k1']);
  t.is(kg.code, 0, kg.err);
  t.is(statSync(join(dir, 'k1.key')).mode & 0o777, 0o600);
  const again = await cli(['ota', 'keygen', '--out', dir, '--name', 'k1']);
  t.is(again.code, 1);
  t.is(again.err, `mnn-edge ota: ${join(dir, 'k1.key')} already exists; not overwriting a key\n`);

  const targets = join(dir, 'targets.json');
  const p = await cli([
    'ota',
    'pack',
    join(modelFixturesDir, 'tiny-llm'),
    '--id',
    'tiny-llm',
    '--version',
    '1.2.0',
    '--out',
    dir,
    '--targets',
    targets,
  ]);
  t.is(p.code, 0, p.err);
  t.is((JSON.parse(p.out) as { package: string }).package, 'tiny-llm@1.2.0');

  const s = await cli(['ota', 'sign', targets, '--key', join(dir, 'k1.key'), '--bump', '--expires', '30d']);
  t.is(s.code, 0, s.err);
  t.regex(s.out, /^signed targets version 2 \(expires .*\) with 1 signature\(s\): /);
  const doc = JSON.parse(readFileSync(targets, 'utf8')) as SignedTargets;
  const policy = trustPolicyFromConfig([{ publicKey: readFileSync(join(dir, 'k1.pub'), 'utf8') }], 1);
  const v = verifyTargets(doc, policy, { nowMs: Date.now(), clockSynchronized: true, last: undefined });
  t.is(v.body.packages[0]!.artifacts[0]!.name, 'tiny-llm-1.2.0-cpu-fp32.tar');

  // A second holder adds a signature over the same content.
  await cli(['ota', 'keygen', '--out', dir, '--name', 'k2']);
  const s2 = await cli(['ota', 'sign', targets, '--key', join(dir, 'k2.key')]);
  t.is(s2.code, 0, s2.err);
  t.is((JSON.parse(readFileSync(targets, 'utf8')) as SignedTargets).signatures.length, 2);
});

test('usage errors name the problem', async (t) => {
  t.throws(() => parseExpiry('soon', 0), {
    message: "--expires expects a duration like 30d or 12h, or an ISO time, got 'soon'",
  });
  t.is(parseExpiry('2d', 0), '1970-01-03T00:00:00.000Z');
  const bad = await cli(['ota', 'publish', '--targets', 'x']);
  t.is(bad.code, 1);
  t.is(bad.err, 'mnn-edge ota: Cannot read targets document x: ENOENT (no such file)\n');
  const unknown = await cli(['ota', 'frobnicate']);
  t.is(unknown.code, 2);
  t.true(unknown.err.startsWith("mnn-edge ota: unknown command 'frobnicate'\nUsage: mnn-edge ota <command>"));
});
