import { readFileSync } from 'node:fs';
import { arch, release } from 'node:os';
import test from 'ava';
import { formatHostFacts, readHostFacts } from '../../agent/cli/commands/host-facts.js';

test('host facts name this system: the kernel uname gives and the distribution os-release names', async (t) => {
  const facts = await readHostFacts();
  t.is(facts.kernel, release());
  t.is(facts.arch, arch());
  const osRelease = readFileSync('/etc/os-release', 'utf8');
  const name = /^NAME="?([^"\n]+)"?$/m.exec(osRelease)?.[1];
  if (name) t.true(facts.os.startsWith(name), `${facts.os} should start with ${name}`);
  const text = formatHostFacts(facts);
  t.regex(text, /^Host \(this running system\)\n {2}os {13}\S/);
  t.true(text.includes(`${release()} ${arch()}`));
});

test('a machine nothing names is said to be unknown', (t) => {
  const text = formatHostFacts({ os: 'Poky 5.0', kernel: '6.6.23', arch: 'arm64', machine: null });
  t.true(text.endsWith('  machine        unknown'));
});
