import { PassThrough } from 'node:stream';
import test from 'ava';
import { commandEntries, loadCommands } from '../../agent/cli/commands/index.js';
import { main } from '../../agent/cli/main.js';

function io() {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  return { io: { stdout, stderr, env: {} }, out: () => out, err: () => err };
}

test('the lazy command list agrees with each command module', async (t) => {
  const commands = await loadCommands();
  t.deepEqual(
    commands.map((c) => c.name),
    commandEntries.map((e) => e.name),
  );
  for (const c of commands) t.true(c.usage.startsWith(`mnn-edge ${c.name}`), c.name);
});

test('no command: usage on stdout and exit code 2; an unknown one names itself', async (t) => {
  const a = io();
  t.is(await main([], a.io), 2);
  t.regex(a.out(), /^Usage: mnn-edge <command>/);
  t.regex(a.out(), /\n {2}detect {2,}describe this board/);
  const b = io();
  t.is(await main(['frobnicate'], b.io), 2);
  t.is(b.err(), "mnn-edge: unknown command 'frobnicate'. Run 'mnn-edge --help' for the list.\n");
});

test('a bad flag is a usage error with exit code 2', async (t) => {
  const a = io();
  t.is(await main(['detect', '--bogus'], a.io), 2);
  t.regex(a.err(), /^mnn-edge detect: unknown option --bogus\nUsage: mnn-edge detect/);
});

test('--version, -v and `version` print the package version; --help, -h and `help` list the commands', async (t) => {
  const { agentVersion } = await import('../../agent/cli/commands/version.js');
  t.regex(agentVersion(), /^\d+\.\d+\.\d+/);
  for (const flag of ['--version', '-v', 'version']) {
    const a = io();
    t.is(await main([flag], a.io), 0, flag);
    t.is(a.out(), `${agentVersion()}\n`, flag);
    t.is(a.err(), '', flag);
  }
  for (const flag of ['--help', '-h', 'help']) {
    const a = io();
    t.is(await main([flag], a.io), 0, flag);
    t.regex(a.out(), /^Usage: mnn-edge <command> \[options\]\n {7}mnn-edge --help \| --version\n/, flag);
    t.regex(a.out(), /\n {2}version {2,}print the agent version\n/, flag);
  }
  const one = io();
  t.is(await main(['help', 'config'], one.io), 0);
  t.regex(one.out(), /^Usage: mnn-edge config \[--config FILE\]/);
});
