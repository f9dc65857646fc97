import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { listElfFiles, machineOfNodeArch } from '../../scripts/elf.js';
import { manifestPath, type StageResult, stage } from '../../scripts/stage.js';
import { parseStageManifest } from '../../scripts/stage-manifest.js';
import { socFixturesDir } from '../helpers/paths.js';
import { startNotifyListener } from './sdnotify-listener.js';

// Stage the image's layout into a temp root once, then start the agent the way systemd would: the staged
// unit's ExecStart, with NOTIFY_SOCKET pointing at a real datagram listener.

const destdir = mkdtempSync(join(tmpdir(), 'mnn-edge-stage-'));
const manifest = parseStageManifest(readFileSync(manifestPath, 'utf8'));
let staged: StageResult;
test.before(() => {
  staged = stage({ destdir, build: true });
});
test.after.always(() => rmSync(destdir, { recursive: true, force: true }));

const unitPath = () => join(destdir, 'usr/lib/systemd/system/mnn-edge.service');

/** The staged CLI's commands, from its --help, and all it printed (a staged binary that crashes lists none). */
function stagedHelp(): { commands: string[]; output: string } {
  const help = spawnSync(join(destdir, 'usr', 'bin', 'mnn-edge'), ['--help'], { encoding: 'utf8' });
  const exit = help.error ? help.error.message : `exit ${help.status ?? help.signal}`;
  return {
    commands: [...(help.stdout ?? '').matchAll(/^ {2}(\S+)\s/gm)].map((m) => m[1]!),
    output: `${exit}\n${help.stdout ?? ''}${help.stderr ?? ''}`,
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** The value of the one `key=` line of a unit file. */
function unitValue(unitText: string, key: string): string {
  const lines = unitText.split('\n').filter((l) => l.startsWith(`${key}=`));
  if (lines.length !== 1) throw new Error(`expected one ${key}=, found ${lines.length}`);
  return lines[0]!.slice(key.length + 1).trim();
}

/** The one `key=` line of a unit file, split into words (our units quote nothing). */
function unitCommand(unitText: string, key: 'ExecStart' | 'ExecStartPre'): string[] {
  const lines = unitText.split('\n').filter((l) => l.startsWith(`${key}=`));
  if (lines.length !== 1) throw new Error(`expected one ${key}=, found ${lines.length}`);
  return lines[0]!
    .slice(key.length + 1)
    .trim()
    .split(/\s+/);
}

/** A unit command as it runs from the staged tree: the image's /usr/bin/node is this node, its paths under destdir. */
function stagedCommand(argv: readonly string[]): string[] {
  return argv.map((a, i) =>
    i === 0 && a === '/usr/bin/node' ? process.execPath : a.startsWith('/usr/') ? join(destdir, a) : a,
  );
}

test('every manifest entry is laid out, with its mode, and nothing from the development tree leaks in', (t) => {
  for (const e of manifest.entries) {
    if (e.kind === 'file') {
      t.is(statSync(join(destdir, e.dest)).mode & 0o777, e.mode, e.dest);
    } else if (e.kind === 'link') {
      t.true(lstatSync(join(destdir, e.dest)).isSymbolicLink(), e.dest);
      t.is(readlinkSync(join(destdir, e.dest)), e.target);
      t.true(existsSync(join(destdir, e.dest)), `${e.dest} resolves inside the stage`);
    } else if (!e.optional) {
      t.true(existsSync(join(staged.appDir, e.path)), e.path);
    }
  }
  const modules = join(staged.appDir, 'node_modules');
  t.true(existsSync(join(modules, 'better-sqlite3')), 'production dependency present');
  for (const dev of ['typescript', 'ava', '@biomejs', 'playwright-core', 'tsx']) {
    t.false(existsSync(join(modules, dev)), `devDependency ${dev} is not staged`);
  }
  for (const leak of ['test', 'bench', 'yocto', 'agent', 'scripts', 'package-lock.json']) {
    t.false(existsSync(join(staged.appDir, leak)), `${leak} is not part of the install`);
  }
  t.is(
    statSync(join(staged.appDir, 'dist', 'agent', 'cli', 'mnn-edge.js')).mode & 0o111,
    0o111,
    'bin is executable',
  );
});

test('every ELF file of the staged tree is listed with its CPU, all for this host, no build leftovers', (t) => {
  const host = machineOfNodeArch(process.arch);
  for (const f of staged.elfFiles) t.log(`${f.machine} ${f.path}`);
  t.log(`staged tree: ${(staged.bytes / 1e6).toFixed(1)} MB`);
  t.deepEqual(listElfFiles(destdir), staged.elfFiles, 'the stage reports what is on disk');
  t.true(
    staged.elfFiles.some((f) => f.path.endsWith('better-sqlite3/build/Release/better_sqlite3.node')),
    'the native SQLite binding is there',
  );
  t.deepEqual(
    staged.elfFiles.filter((f) => f.machine !== host),
    [],
    `only ${host} binaries`,
  );
  t.deepEqual(
    staged.elfFiles.filter((f) => !f.path.endsWith('.node')),
    [],
    'no object files or other build intermediates',
  );
});

test.serial(
  'the staged agent, started from the staged unit, reports READY=1 and serves healthz',
  async (t) => {
    const help = stagedHelp();
    if (!help.commands.includes('run')) {
      t.fail(`the staged mnn-edge lists no 'run' command; --help said:\n${help.output}`);
      return;
    }
    const work = mkdtempSync(join(tmpdir(), 'mnn-edge-staged-run-'));
    t.teardown(() => rmSync(work, { recursive: true, force: true }));

    // The image's own configuration, pointed at a fixture board, a temp data dir and free loopback ports.
    const argv = unitCommand(readFileSync(unitPath(), 'utf8'), 'ExecStart');
    const configAt = argv.indexOf('--config');
    t.true(configAt > 0, 'ExecStart passes --config');
    const imageConfig = JSON.parse(readFileSync(join(destdir, argv[configAt + 1]!), 'utf8'));
    const httpPort = await freePort();
    const brokerPort = await freePort();
    const config = {
      ...imageConfig,
      dataDir: join(work, 'data'),
      root: join(socFixturesDir, 'rpi5-bcm2712'),
      http: { ...imageConfig.http, bind: '127.0.0.1', port: httpPort, mdns: false },
      wyoming: { ...imageConfig.wyoming, bind: '127.0.0.1', port: 0, mdns: false },
      mqtt: { ...imageConfig.mqtt, embeddedBroker: { enabled: true, host: '127.0.0.1', port: brokerPort } },
    };
    const configFile = join(work, 'agent.json');
    writeFileSync(configFile, JSON.stringify(config));
    const command = stagedCommand(argv);
    command[configAt + 1] = configFile;

    const listener = await startNotifyListener(join(work, 'notify.sock'));
    t.teardown(() => listener.close());
    const agent: ChildProcess = spawn(command[0]!, command.slice(1), {
      cwd: work,
      env: {
        PATH: process.env['PATH'],
        HOME: work,
        NODE_ENV: 'production',
        NOTIFY_SOCKET: listener.path,
        WATCHDOG_USEC: '2000000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    agent.stdout!.on('data', (c: Buffer) => {
      output += c.toString();
    });
    agent.stderr!.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const exited = once(agent, 'exit');
    t.teardown(() => {
      if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
    });

    try {
      await listener.waitFor('READY=1', 60_000);
    } catch (err) {
      t.fail(`${(err as Error).message}\nagent output:\n${output.slice(-4000)}`);
      return;
    }
    const health = await fetch(`http://127.0.0.1:${httpPort}/healthz`);
    t.is(health.status, 200);
    // The page itself, not any 200: a fallback handler answering every path would pass a status check; and the
    // built bundle, since an unbuilt dashboard answers `/` with a page that says how to build it.
    // READY comes before the modules register their routes (issue 18): the page answers 503 until the dashboard's
    // module is up.
    let page = await fetch(`http://127.0.0.1:${httpPort}/`);
    for (let tries = 0; page.status === 503 && tries < 600; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      page = await fetch(`http://127.0.0.1:${httpPort}/`);
    }
    t.is(page.status, 200);
    t.regex(page.headers.get('content-type') ?? '', /^text\/html/);
    t.regex(await page.text(), /<title>mnn-edge<\/title>/);
    t.is((await fetch(`http://127.0.0.1:${httpPort}/assets/app.js`)).status, 200);
    // STATUS= follows once every module has started (the last ones may still be starting when the page answers).
    const hasStatus = () =>
      listener.received.some((n) => n.data.split('\n').some((l) => l.startsWith('STATUS=')));
    for (let tries = 0; !hasStatus() && tries < 300; tries++) await new Promise((r) => setTimeout(r, 100));
    t.true(hasStatus(), 'a STATUS= line for systemctl status');
    await listener.waitFor('WATCHDOG=1', 5_000);

    agent.kill('SIGTERM');
    const [code] = await exited;
    t.is(code, 0, output.slice(-2000));
    await listener.waitFor('STOPPING=1', 1_000);
  },
);

test.serial("the staged unit's privileged ExecStartPre writes the capability cache", (t) => {
  const help = stagedHelp();
  if (!help.commands.includes('detect')) {
    t.fail(`the staged mnn-edge lists no 'detect' command; --help said:\n${help.output}`);
    return;
  }
  const argv = unitCommand(readFileSync(unitPath(), 'utf8'), 'ExecStartPre');
  t.true(argv[0]!.startsWith('+'), 'runs with full privileges');
  const work = mkdtempSync(join(tmpdir(), 'mnn-edge-staged-detect-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const cacheAt = argv.indexOf('--write-cache');
  t.true(cacheAt > 0, 'ExecStartPre passes --write-cache');
  const cache = join(work, 'capabilities.json');
  const command = [join(destdir, argv[0]!.slice(1)), ...argv.slice(1)];
  command[cacheAt + 1] = cache;
  // On a board the root is /; here a fixture board stands in for it.
  const r = spawnSync(command[0]!, [...command.slice(1), '--root', join(socFixturesDir, 'rpi5-bcm2712')], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'], HOME: work },
  });
  t.is(r.status, 0, `${r.stdout}${r.stderr}`);
  t.is(typeof JSON.parse(readFileSync(cache, 'utf8')), 'object');
});

/** uid and gid of a local account, or undefined when it does not exist. */
function account(name: string): { uid: number; gid: number } | undefined {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

test.serial(
  'both steps of the staged unit as their users under its UMask: the agent reads the root-written cache',
  (t) => {
    // systemd runs ExecStartPre=+ as root and ExecStart as User=, both with the unit's UMask=. Switching users
    // needs root; the unit's mnn-edge account does not exist on a development host, and any unprivileged
    // account meets the same permission checks.
    const agentAccount = account('nobody');
    if (process.getuid?.() !== 0 || agentAccount === undefined) {
      t.log('skipped: switching users needs root and a "nobody" account');
      t.pass();
      return;
    }
    const unitText = readFileSync(unitPath(), 'utf8');
    const umask = unitValue(unitText, 'UMask');
    t.regex(umask, /^0[0-7]{3}$/);
    const pre = unitCommand(unitText, 'ExecStartPre');
    const main = unitCommand(unitText, 'ExecStart');
    t.true(pre[0]!.startsWith('+'), 'the detect step is the privileged one');
    t.is(unitValue(unitText, 'User'), 'mnn-edge');

    // The data directory as tmpfiles.d creates it: owned by the agent's user, 0750.
    const work = mkdtempSync(join(tmpdir(), 'mnn-edge-staged-users-'));
    t.teardown(() => rmSync(work, { recursive: true, force: true }));
    chmodSync(work, 0o755);
    chmodSync(destdir, 0o755);
    const dataDir = join(work, 'data');
    mkdirSync(dataDir, { mode: 0o750 });
    chownSync(dataDir, agentAccount.uid, agentAccount.gid);
    const cache = join(dataDir, 'capabilities.json');
    const cacheAt = pre.indexOf('--write-cache');
    const preArgv = [join(destdir, pre[0]!.slice(1)), ...pre.slice(1)];
    preArgv[cacheAt + 1] = cache;
    const env = { PATH: process.env['PATH'], HOME: work };
    const withUmask = (argv: string[]) => ['sh', '-c', `umask ${umask} && exec "$0" "$@"`, ...argv];

    const rootArgv = withUmask([...preArgv, '--root', join(socFixturesDir, 'rpi5-bcm2712')]);
    const root = spawnSync(rootArgv[0]!, rootArgv.slice(1), { encoding: 'utf8', env });
    t.is(root.status, 0, `${root.stdout}${root.stderr}`);
    const st = statSync(cache);
    t.is(st.uid, 0, 'written by root');
    t.is(st.mode & 0o777, 0o644, `readable by the agent despite UMask=${umask}`);

    // The agent's program, as the agent's user, reads the cache as `run` does at start.
    const agentArgv = withUmask([
      'setpriv',
      `--reuid=${agentAccount.uid}`,
      `--regid=${agentAccount.gid}`,
      '--clear-groups',
      // The agent's program with the unit's node flags, running another command.
      ...stagedCommand(main.slice(0, main.indexOf('run'))),
      'detect',
      '--from-cache',
      cache,
      '--json',
    ]);
    const agent = spawnSync(agentArgv[0]!, agentArgv.slice(1), { encoding: 'utf8', env, cwd: work });
    t.is(agent.status, 0, `${agent.stdout}${agent.stderr}`);
    t.is(JSON.parse(agent.stdout).soc.family.value, 'arm64-generic');
  },
);
