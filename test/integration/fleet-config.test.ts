import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import test from 'ava';
import { main } from '../../agent/cli/main.js';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';
import { spawnAgentRun } from '../helpers/run-agent.js';

// `mnn-edge fleet config` against two `mnn-edge run` processes on a real mosquitto: reading, changing by
// selector with the devices' own answers (applied, the schema's message, a refused slot, a revision conflict),
// a device that stops answering named, the usage errors refused before anything is sent, and config drift
// against a reference file with secrets masked.

const SECRET_A = 'metrics-token-of-edge-a-0123456789';
const SECRET_REF = 'metrics-token-in-reference-file-42';

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await main(argv, { stdout, stderr, env: { MNN_EDGE_DATA_DIR: '/nonexistent' } });
  return { code, out, err };
}

if (!mosquittoAvailable()) {
  test('fleet config (skipped: mosquitto not installed; run scripts/install-test-deps.sh)', (t) => t.pass());
} else {
  test('fleet config reads, changes by selector with each device answering, guards revisions and lists drift', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-fleet-config-'));
    const broker = await startMosquitto();
    const agents = [
      { id: 'edge-a', extra: { http: { metricsToken: SECRET_A } } },
      { id: 'edge-b', extra: {} },
    ].map(({ id, extra }) => {
      const child = spawnAgentRun(join(dir, id), {
        config: {
          deviceId: id,
          tags: ['lab'],
          mqtt: { url: broker.url, protocolVersion: 5 },
          ...extra,
        },
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      return { id, child, out: () => out };
    });
    t.teardown(async () => {
      for (const a of agents) {
        a.child.kill('SIGCONT');
        a.child.kill('SIGKILL');
      }
      await broker.close();
      rmSync(dir, { recursive: true, force: true });
    });
    // Both online with their retained config document: what `fleet config` addresses and falls back to.
    const op = await FleetOperator.connect({ url: broker.url });
    for (let i = 0; ; i++) {
      const devices = await op.listDevices(200);
      const ready = devices.filter((d) => d.status?.state === 'online' && d.documents.config);
      if (ready.length === 2) break;
      if (i > 600) throw new Error(`agents not online:\n${agents.map((a) => a.out()).join('\n')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    await op.close();
    const url = ['--url', broker.url];

    const read = await cli('fleet', 'config', 'edge-a', ...url);
    t.is(read.code, 0, read.err);
    t.regex(read.out, /^edge-a \(revision 0\)\n/);
    t.regex(read.out, /\n {2}tags\s+\["lab"\]\s+file\n/);
    t.regex(read.out, /\n {2}http\.metricsToken\s+"\*\*\*"\s+file\n/);
    t.false(read.out.includes(SECRET_A));

    // Refused here, before anything is sent: syntax, unknown keys, keys that only the file changes.
    const noEq = await cli('fleet', 'config', '--all', '--set', 'voice.systemPrompt', ...url);
    t.is(noEq.code, 2);
    t.regex(noEq.err, /--set expects key=value .*got "voice\.systemPrompt"/);
    const typo = await cli('fleet', 'config', '--all', '--set', 'voice.sytemPrompt=x', ...url);
    t.is(typo.code, 2);
    t.regex(typo.err, /unknown key "sytemPrompt" in voice \(known: .*systemPrompt/);
    const port = await cli('fleet', 'config', '--all', '--set', 'http.port=80', ...url);
    t.is(port.code, 2);
    t.regex(port.err, /http\.port: is changed only in each device's configuration file, not over the fleet/);
    const slot = await cli('fleet', 'config', '--all', '--set', 'slots.voice.llmm.model=x', ...url);
    t.is(slot.code, 2);
    t.regex(slot.err, /unknown slot \(slots are voice\.vad, /);

    const set = await cli(
      'fleet',
      'config',
      '--tag',
      'lab',
      '--set',
      'voice.systemPrompt=Be brief.',
      '--set',
      'vision.watch.intervalS=45',
      '--operator',
      'ops-1',
      ...url,
    );
    t.is(set.code, 0, set.err + set.out);
    const lines = set.out.trim().split('\n');
    t.is(lines.length, 2, set.out);
    t.regex(
      lines[0]!,
      /^edge-a: applied, revision 1: vision\.watch\.intervalS \(default\) -> 45, voice\.systemPrompt \(default\) -> "Be brief\."$/,
    );
    t.regex(lines[1]!, /^edge-b: applied, revision 1: /);

    // Each device answers with its dashboard's messages: the schema's, naming the key; the slot check's.
    const range = await cli('fleet', 'config', 'edge-a', '--set', 'voice.maxNewTokens=999999', ...url);
    t.is(range.code, 1);
    t.regex(range.out, /^edge-a: refused: .*voice\.maxNewTokens.*8192/);
    const model = await cli('fleet', 'config', 'edge-b', '--set', 'slots.voice.llm.model=nope', ...url);
    t.is(model.code, 1);
    t.regex(model.out, /^edge-b: refused: slots\.voice\.llm: model "nope" is not installed on this device/);

    // Two operators: the one holding an old revision is told the current one, and nothing changes.
    const stale = await cli(
      'fleet',
      'config',
      'edge-a',
      '--set',
      'voice.systemPrompt=Mine',
      '--expect-revision',
      '0',
      ...url,
    );
    t.is(stale.code, 1);
    t.regex(stale.out, /^edge-a: conflict \(409\): The settings are at revision 1, not 0/);
    const fresh = await cli(
      'fleet',
      'config',
      'edge-a',
      '--set',
      'voice.systemPrompt=Mine',
      '--expect-revision',
      '1',
      ...url,
    );
    t.is(fresh.code, 0, fresh.out + fresh.err);
    t.regex(fresh.out, /^edge-a: applied, revision 2: voice\.systemPrompt "Be brief\." -> "Mine"/);

    // Drift against a reference: edge-a's prompt differs; secrets are masked on both sides, never printed.
    const ref = join(dir, 'reference.json');
    writeFileSync(
      ref,
      JSON.stringify({
        voice: { systemPrompt: 'Be brief.' },
        vision: { watch: { intervalS: 45 } },
        http: { metricsToken: SECRET_REF },
      }),
    );
    const drift = await cli('fleet', 'config', '--all', '--diff', ref, ...url);
    t.is(drift.code, 1, drift.err);
    t.regex(drift.out, /^edge-a: 1 key differs from .*reference\.json \(revision 2\)\n/);
    t.regex(drift.out, /\n {2}voice\.systemPrompt\s+"Mine"\s+"Be brief\."\n/);
    t.regex(
      drift.out,
      /\nedge-b: 1 key differs .*\n.*KEY.*\n {2}http\.metricsToken\s+\(unset\)\s+"\*\*\*"\n/,
    );
    t.regex(drift.out, /\n2 devices compared with .*: 2 differ, 0 match\n$/);
    t.false(drift.out.includes(SECRET_A) || drift.out.includes(SECRET_REF));
    const badRef = join(dir, 'bad.json');
    writeFileSync(badRef, JSON.stringify({ voice: { maxNewTokens: 0 } }));
    const bad = await cli('fleet', 'config', '--all', '--diff', badRef, ...url);
    t.is(bad.code, 1);
    t.regex(bad.err, /Invalid configuration in .*bad\.json: voice\.maxNewTokens/);

    // A device that stops answering (still online by its retained status) is named; its last document is shown.
    agents[1]!.child.kill('SIGSTOP');
    // 6 s: edge-a answers well within it on a loaded machine; edge-b, stopped, never does.
    const partial = await cli('fleet', 'config', '--tag', 'lab', '--timeout', '6000', '--diff', ref, ...url);
    agents[1]!.child.kill('SIGCONT');
    t.is(partial.code, 1);
    t.regex(partial.err, /1 addressed device did not answer within 6000 ms: edge-b/);
    t.regex(
      partial.out,
      /\nedge-b: 1 key differs .*\(did not answer: its retained config document of \d+ s ago\)/,
    );
    const quiet = await cli('fleet', 'config', '--tag', 'lab', '--set', 'tags=["lab","north"]', ...url);
    t.is(quiet.code, 0, quiet.out + quiet.err);
    t.regex(quiet.out, /^edge-a: applied, revision 3: tags \["lab"\] -> \["lab","north"\]\nedge-b: applied/);
  });
}
