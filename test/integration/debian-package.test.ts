import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
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
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { debianUnit, ENGINE_LIB_DIR } from '../../scripts/package-deb.js';
import { recipeDir } from '../../scripts/stage.js';
import { packageDebInChild } from '../helpers/package-deb-child.js';

// The amd64 packages built by the real script, then checked without booting anything: their contents, the
// unit's single source, shellcheck and lintian, and an install / upgrade / downgrade / remove / purge cycle by
// the real dpkg into a throwaway root (dpkg --root with --force-script-chrootless: the maintainer scripts run on
// this machine with DPKG_ROOT set and touch only that root). The system tier (npm run test:system) installs the
// arm64 packages into a booted Debian.

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const skip = !has('dpkg-deb')
  ? 'dpkg-deb is absent (scripts/install-system-deps.sh)'
  : !has('patchelf')
    ? 'patchelf is absent (scripts/install-system-deps.sh)'
    : process.arch !== 'x64'
      ? 'the amd64 packages are built on x86-64'
      : !existsSync(
            join(import.meta.dirname, '..', '..', 'engine', 'build', 'Release', 'mnn_edge_engine.node'),
          )
        ? 'the engine addon is not built (npm run build:engine)'
        : undefined;

const out = mkdtempSync(join(tmpdir(), 'mnn-edge-debs-'));
const debs: Record<string, string> = {};
test.before(async (t) => {
  if (skip !== undefined) return;
  t.timeout(20 * 60_000); // two builds of the agent package on a busy 2-core machine
  const only = ['mnn-edge', 'mnn-edge-engine'];
  // One after the other, as a user would: the two builds share the staging caches.
  const first = await packageDebInChild({ arch: 'amd64', outDir: join(out, '1'), version: '0.1.0', only });
  const newer = await packageDebInChild({
    arch: 'amd64',
    outDir: join(out, '2'),
    version: '0.2.0',
    only: ['mnn-edge'],
  });
  for (const d of first) debs[`${d.name}@1`] = d.path;
  debs['mnn-edge@2'] = newer[0]!.path;
});
test.after.always(() => rmSync(out, { recursive: true, force: true }));

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...env } });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error?.message ?? ''}` };
}

function skipped(t: { log: (m: string) => void; pass: () => void }, extra?: string): boolean {
  const why = skip ?? extra;
  if (why === undefined) return false;
  t.log(`debian-package: skipped: ${why}`);
  t.pass();
  return true;
}

test('the agent package holds the staged agent, its unit, sysusers, tmpfiles, the conffile and the CLI', (t) => {
  if (skipped(t)) return;
  const list = run('dpkg-deb', ['-c', debs['mnn-edge@1']!]).out;
  for (const path of [
    './usr/lib/node_modules/mnn-edge/dist/agent/cli/mnn-edge.js',
    './usr/lib/node_modules/mnn-edge/dashboard/dist/',
    './usr/lib/node_modules/mnn-edge/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
    './usr/lib/systemd/system/mnn-edge.service',
    './usr/lib/sysusers.d/mnn-edge.conf',
    './usr/lib/tmpfiles.d/mnn-edge.conf',
    './etc/mnn-edge/agent.json',
    './usr/bin/mnn-edge',
    './usr/share/doc/mnn-edge/copyright',
  ]) {
    t.true(list.includes(path), `${path} missing from the package:\n${list.slice(0, 2000)}`);
  }
  t.false(list.includes('mnn_edge_engine.node'), 'the engine addon belongs to mnn-edge-engine');
  t.false(list.includes('mosquitto'), 'the mosquitto variant is not part of the Debian package');
  t.is(run('dpkg-deb', ['-f', debs['mnn-edge@1']!, 'Architecture']).out.trim(), 'amd64');
  t.regex(run('dpkg-deb', ['-f', debs['mnn-edge@1']!, 'Depends']).out, /mnn-edge-node \(>= 20\.18\)/);
  t.regex(run('dpkg-deb', ['-f', debs['mnn-edge@1']!, 'Recommends']).out, /mnn-edge-engine \(= 0\.1\.0\)/);
  t.is(run('dpkg-deb', ['--ctrl-tarfile', debs['mnn-edge@1']!]).status, 0);
  const ctrl = mkdtempSync(join(out, 'ctrl-'));
  run('dpkg-deb', ['-e', debs['mnn-edge@1']!, ctrl]);
  t.is(readFileSync(join(ctrl, 'conffiles'), 'utf8'), '/etc/mnn-edge/agent.json\n');
});

test('the unit is the Yocto layer unit with only the shipped Node put in', (t) => {
  if (skipped(t)) return;
  const tree = mkdtempSync(join(out, 'x-'));
  t.is(run('dpkg-deb', ['-x', debs['mnn-edge@1']!, tree]).status, 0);
  const yocto = readFileSync(join(recipeDir, 'files', 'mnn-edge.service'), 'utf8');
  const shipped = readFileSync(join(tree, 'usr/lib/systemd/system/mnn-edge.service'), 'utf8');
  t.is(shipped, debianUnit(yocto));
  const changed = shipped.split('\n').filter((l, i) => l !== yocto.split('\n')[i]);
  t.deepEqual(changed.length, 1);
  t.true(changed[0]!.startsWith('ExecStart=/usr/lib/mnn-edge/node/bin/node --max-semi-space-size=1'));
  t.regex(
    readFileSync(join(tree, 'usr/bin/mnn-edge'), 'utf8'),
    /^#!\/bin\/sh\nexec \/usr\/lib\/mnn-edge\/node\/bin\/node /,
  );
});

test('the engine package holds the addon and the MNN it was built against, found through its RUNPATH', (t) => {
  if (skipped(t)) return;
  const tree = mkdtempSync(join(out, 'e-'));
  t.is(run('dpkg-deb', ['-x', debs['mnn-edge-engine@1']!, tree]).status, 0);
  const addon = join(tree, 'usr/lib/node_modules/mnn-edge/engine/build/Release/mnn_edge_engine.node');
  t.true(existsSync(addon));
  t.true(existsSync(join(tree, ENGINE_LIB_DIR, 'libMNN.so')));
  // amd64's MNN has OpenCL: the name MNN dlopens links to the ICD loader's soname, in a directory that libMNN.so
  // and the addon (whose backend probe dlopens it too) name in their RUNPATH.
  t.regex(
    run('readelf', ['-d', addon]).out,
    /RUNPATH.*\[\/usr\/lib\/mnn-edge\/engine:\/usr\/lib\/mnn-edge\/engine\/gpu-loaders\]/,
  );
  t.regex(
    run('readelf', ['-d', join(tree, ENGINE_LIB_DIR, 'libMNN.so')]).out,
    /RUNPATH.*\[\$ORIGIN:\$ORIGIN\/gpu-loaders\]/,
  );
  t.is(
    readlinkSync(join(tree, ENGINE_LIB_DIR, 'gpu-loaders', 'libOpenCL.so')),
    '../../../x86_64-linux-gnu/libOpenCL.so.1',
  );
  t.regex(run('dpkg-deb', ['-f', debs['mnn-edge-engine@1']!, 'Depends']).out, /mnn-edge \(= 0\.1\.0\)/);
});

test('the maintainer scripts pass shellcheck as POSIX sh', (t) => {
  if (skipped(t, has('shellcheck') ? undefined : 'shellcheck is absent')) return;
  const ctrl = mkdtempSync(join(out, 'sc-'));
  run('dpkg-deb', ['-e', debs['mnn-edge@1']!, ctrl]);
  const scripts = ['preinst', 'postinst', 'prerm', 'postrm'].map((s) => join(ctrl, s));
  for (const s of scripts) t.is(statSync(s).mode & 0o777, 0o755, s);
  const r = run('shellcheck', ['-s', 'sh', ...scripts]);
  t.is(r.status, 0, r.out);
});

test('lintian finds no error or warning beyond the justified overrides', (t) => {
  if (skipped(t, has('lintian') ? undefined : 'lintian is absent')) return;
  t.timeout(20 * 60_000); // lintian reads every file; on a busy 2-core machine that took 8 min
  const r = run('lintian', ['--fail-on', 'error,warning', debs['mnn-edge@1']!, debs['mnn-edge-engine@1']!]);
  t.is(r.status, 0, r.out);
});

/** An empty dpkg database in a fresh root; with systemd's binary in it unless told otherwise. */
function throwawayRoot(withSystemd = true): string {
  const root = mkdtempSync(join(out, 'root-'));
  for (const d of ['var/lib/dpkg/info', 'var/lib/dpkg/updates', 'etc', 'usr/lib/systemd']) {
    mkdirSync(join(root, d), { recursive: true });
  }
  writeFileSync(join(root, 'var/lib/dpkg/status'), '');
  writeFileSync(join(root, 'var/lib/dpkg/available'), '');
  if (withSystemd) copyFileSync('/usr/lib/systemd/systemd', join(root, 'usr/lib/systemd/systemd'));
  return root;
}

const dpkgIn = (root: string, ...args: string[]) =>
  run('dpkg', [`--root=${root}`, '--force-script-chrootless', '--force-depends', '--log=/dev/null', ...args]);

const rootOnly = () =>
  process.getuid?.() !== 0
    ? 'the install cycle needs root (dpkg --root sets file owners)'
    : !existsSync('/usr/lib/systemd/systemd') || !has('systemd-sysusers')
      ? 'systemd is not installed on this machine'
      : undefined;

test.serial('install, upgrade, refused downgrade, remove and purge in a throwaway root', (t) => {
  if (skipped(t, rootOnly())) return;
  const root = throwawayRoot();
  const data = join(root, 'var/lib/mnn-edge');
  const install = dpkgIn(root, '-i', debs['mnn-edge@1']!);
  t.is(install.status, 0, install.out);
  t.regex(
    readFileSync(join(root, 'etc/passwd'), 'utf8'),
    /^mnn-edge:x:\d+:\d+:mnn-edge agent:\/var\/lib\/mnn-edge:/m,
  );
  t.regex(readFileSync(join(root, 'etc/group'), 'utf8'), /^render:x:\d+:mnn-edge$/m);
  t.is(statSync(data).mode & 0o777, 0o750);
  t.is(readFileSync(join(data, '.package-version'), 'utf8'), '0.1.0\n');
  t.true(
    lstatSync(join(root, 'etc/systemd/system/multi-user.target.wants/mnn-edge.service')).isSymbolicLink(),
  );

  // The agent's state (identity, token) and an operator's edit of the conffile survive an upgrade.
  writeFileSync(join(data, 'pairing-token'), 'token-from-first-boot\n');
  const conf = join(root, 'etc/mnn-edge/agent.json');
  writeFileSync(conf, readFileSync(conf, 'utf8').replace('"level": "info"', '"level": "debug"'));
  const upgrade = dpkgIn(root, '-i', debs['mnn-edge@2']!);
  t.is(upgrade.status, 0, upgrade.out);
  t.is(readFileSync(join(data, 'pairing-token'), 'utf8'), 'token-from-first-boot\n');
  t.regex(readFileSync(conf, 'utf8'), /"level": "debug"/);
  t.is(readFileSync(join(data, '.package-version'), 'utf8'), '0.2.0\n');

  const downgrade = dpkgIn(root, '-i', debs['mnn-edge@1']!);
  t.not(downgrade.status, 0);
  t.regex(downgrade.out, /written by mnn-edge 0\.2\.0, newer than this package \(0\.1\.0\)/);
  t.is(readFileSync(join(data, '.package-version'), 'utf8'), '0.2.0\n');

  const remove = dpkgIn(root, '-r', 'mnn-edge');
  t.is(remove.status, 0, remove.out);
  t.false(existsSync(join(root, 'usr/lib/node_modules/mnn-edge')));
  t.is(readFileSync(join(data, 'pairing-token'), 'utf8'), 'token-from-first-boot\n');
  t.true(existsSync(conf), 'remove keeps the conffile');

  const purge = dpkgIn(root, '-P', 'mnn-edge');
  t.is(purge.status, 0, purge.out);
  t.false(existsSync(data), 'purge deletes the data directory');
  t.false(existsSync(conf), 'purge deletes the conffile');
});

test.serial('a system without systemd is refused with a clear message, before anything is unpacked', (t) => {
  if (skipped(t, rootOnly())) return;
  const root = throwawayRoot(false);
  const r = dpkgIn(root, '-i', debs['mnn-edge@1']!);
  t.not(r.status, 0);
  t.regex(r.out, /this system has no systemd .*the agent runs only as a systemd service/);
  t.false(existsSync(join(root, 'usr/lib/node_modules/mnn-edge')));
});
