import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  checkLayer,
  licenseTerms,
  md5OfLines,
  parseMetadata,
  spdxAlternatives,
  variableValue,
} from '../../scripts/check-layer.js';
import { repoRoot } from '../helpers/paths.js';

const layerDir = join(repoRoot, 'yocto', 'meta-mnn-edge');
const recipe = join('recipes-mnn-edge', 'mnn-edge', 'mnn-edge_git.bb');
const licenses = join('recipes-mnn-edge', 'mnn-edge', 'mnn-edge-licenses.inc');
const outOfDate = `${licenses}: out of date with package-lock.json (npm run stage -- --write-shrinkwrap)`;

/** A copy of the layer to break in one place; the checker must name exactly that place. */
function brokenLayer(t: { teardown(fn: () => void): void }, edit: (dir: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'meta-mnn-edge-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(layerDir, dir, { recursive: true });
  edit(dir);
  return dir;
}

function rewrite(path: string, from: string | RegExp, to: string): void {
  const text = readFileSync(path, 'utf8');
  const next = text.replace(from, to);
  if (next === text) throw new Error(`test setup: ${String(from)} not found in ${path}`);
  writeFileSync(path, next);
}

const messages = (dir: string) =>
  checkLayer({ layerDir: dir, sourceRoot: repoRoot }).map((p) => `${p.file}: ${p.message}`);

test('the project layer passes every check', (t) => {
  t.deepEqual(messages(layerDir), []);
});

test('parseMetadata reads continued assignments, operators and overrides, and skips function bodies', (t) => {
  const meta = parseMetadata(
    [
      'SRC_URI = "a \\',
      '    b"',
      'SRC_URI += "c"',
      'SRC_URI:append = " d"',
      'SRC_URI:remove:foo = "a"',
      'PV ?= "1"',
      'PV ?= "2"',
      'inherit npm systemd',
      'do_install() {',
      '    FOO = "not an assignment"',
      '}',
      `export MNN_ROOT = "\${STAGING_DIR_TARGET}/usr"`,
    ].join('\n'),
  );
  t.is(variableValue(meta, 'SRC_URI'), 'a b c d');
  t.is(variableValue(meta, 'PV'), '1');
  t.is(variableValue(meta, 'FOO'), undefined);
  t.is(variableValue(meta, 'MNN_ROOT'), `\${STAGING_DIR_TARGET}/usr`);
  t.deepEqual(meta.inherits, ['npm', 'systemd']);
});

test('license helpers: BitBake terms, SPDX alternatives, md5 of a line range', (t) => {
  t.deepEqual(licenseTerms('MIT & (BSD-2-Clause | Apache-2.0)'), [['MIT'], ['BSD-2-Clause', 'Apache-2.0']]);
  t.throws(() => licenseTerms('MIT, ISC'), { message: 'LICENSE has characters BitBake rejects: "MIT, ISC"' });
  t.deepEqual(spdxAlternatives('(MIT OR WTFPL)'), [['MIT', 'WTFPL']]);
  t.is(md5OfLines(Buffer.from('a\nb\nc\n'), 2, 2), md5OfLines(Buffer.from('b\n')));
});

test('a recipe without SUMMARY is reported', (t) => {
  const dir = brokenLayer(t, (d) => rewrite(join(d, recipe), /^SUMMARY = .*\n/m, ''));
  t.deepEqual(messages(dir), [`${recipe}: required variable SUMMARY is not set`]);
});

test('a stale LIC_FILES_CHKSUM md5 is reported with the actual one', (t) => {
  const actual = md5OfLines(readFileSync(join(repoRoot, 'node_modules', 'ws', 'LICENSE')));
  const dir = brokenLayer(t, (d) =>
    rewrite(
      join(d, licenses),
      `file://node_modules/ws/LICENSE;md5=${actual}`,
      'file://node_modules/ws/LICENSE;md5=00000000000000000000000000000000',
    ),
  );
  t.deepEqual(messages(dir), [
    `${recipe}: LIC_FILES_CHKSUM md5 of node_modules/ws/LICENSE is ${actual}, the recipe says 00000000000000000000000000000000`,
    outOfDate,
  ]);
});

test('the license list covers the project and the license text of every shipped npm package', (t) => {
  const inc = readFileSync(join(layerDir, licenses), 'utf8');
  t.regex(inc, /file:\/\/LICENSE;md5=89aea4e17d99a7cacdbeed46a0096b10/, 'the Apache-2.0 text of the project');
  const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8'));
  for (const [key, entry] of Object.entries(lock.packages as Record<string, { dev?: boolean }>)) {
    if (key === '' || entry.dev) continue;
    t.true(inc.includes(`file://${key}/`), `${key} has a license entry`);
  }
  t.false(inc.includes('node_modules/typescript/'), 'build tools are not shipped, so not listed');
});

test('LICENSE must cover the production npm dependencies and name nothing extra', (t) => {
  const dir = brokenLayer(t, (d) => rewrite(join(d, licenses), ' & BlueOak-1.0.0', ' & GPL-2.0-only'));
  const got = messages(dir);
  t.true(got.includes(`${recipe}: LICENSE names GPL-2.0-only, which no shipped package uses`));
  t.true(got.includes(`${recipe}: LICENSE does not cover tar (BlueOak-1.0.0); add BlueOak-1.0.0`));
  t.true(got.includes(outOfDate));
});

test('the mnn recipe: its LIC_FILES_CHKSUM is checked against an MNN tree when one is given', (t) => {
  const mnnRecipe = join('recipes-mnn', 'mnn', 'mnn_git.bb');
  const fakeMnn = mkdtempSync(join(tmpdir(), 'mnn-src-'));
  t.teardown(() => rmSync(fakeMnn, { recursive: true, force: true }));
  writeFileSync(join(fakeMnn, 'LICENSE.txt'), 'not the Apache text\n');
  const got = checkLayer({ layerDir, sourceRoot: repoRoot, otherSources: { mnn: fakeMnn } }).map(
    (p) => `${p.file}: ${p.message}`,
  );
  t.deepEqual(got, [
    `${mnnRecipe}: LIC_FILES_CHKSUM md5 of LICENSE.txt is ${md5OfLines(Buffer.from('not the Apache text\n'))}, the recipe says dc18cfcd1065a9e9c80aff2102ebd32a`,
  ]);
});

test('a SRC_URI file:// entry missing from the layer is reported', (t) => {
  const dir = brokenLayer(t, (d) =>
    rmSync(join(d, 'recipes-mnn-edge', 'mnn-edge', 'files', 'mnn-edge.tmpfiles')),
  );
  t.deepEqual(messages(dir), [
    `${recipe}: SRC_URI file://mnn-edge.tmpfiles is in none of mnn-edge_git, mnn-edge, files`,
  ]);
});

test('a file installed by the stage manifest must be fetched by the recipe', (t) => {
  const dir = brokenLayer(t, (d) => rewrite(join(d, recipe), '    file://mosquitto.acl \\\n', ''));
  t.deepEqual(messages(dir), [
    `${join('recipes-mnn-edge', 'mnn-edge', 'files', 'stage-manifest.txt')}: layer:mosquitto.acl is installed but not in the recipe's SRC_URI`,
  ]);
});

test('host paths in recipes and appends are reported', (t) => {
  const append = join('dynamic-layers', 'tegra', 'recipes-mnn-edge', 'mnn-edge', 'mnn-edge_%.bbappend');
  const dir = brokenLayer(t, (d) => {
    rewrite(
      join(d, recipe),
      `export MNN_ROOT = "\${STAGING_DIR_TARGET}\${prefix}"`,
      'export MNN_ROOT = "/opt/mnn"',
    );
    writeFileSync(
      join(d, append),
      readFileSync(join(d, append), 'utf8') + 'EXTRA_OECMAKE += "-I/usr/include"\n',
    );
  });
  const got = messages(dir);
  t.true(got.some((m) => m.startsWith(`${recipe}: line `) && m.includes('host path /opt/')));
  t.true(got.some((m) => m.startsWith(`${append}: line `) && m.includes('host path /usr/include')));
  t.is(got.length, 2);
});

test('layer.conf: unknown series, missing dependency and missing scarthgap are reported', (t) => {
  const dir = brokenLayer(t, (d) => {
    const conf = join(d, 'conf', 'layer.conf');
    rewrite(
      conf,
      'LAYERSERIES_COMPAT_mnn-edge = "scarthgap styhead walnascar"',
      'LAYERSERIES_COMPAT_mnn-edge = "kirkstone"',
    );
    rewrite(
      conf,
      'LAYERDEPENDS_mnn-edge = "core openembedded-layer networking-layer"',
      'LAYERDEPENDS_mnn-edge = "core"',
    );
  });
  t.deepEqual(messages(dir), [
    'conf/layer.conf: LAYERSERIES_COMPAT_mnn-edge must include scarthgap (Node 20 in meta-oe)',
    'conf/layer.conf: LAYERSERIES_COMPAT_mnn-edge names unknown series kirkstone',
    'conf/layer.conf: LAYERDEPENDS_mnn-edge must include openembedded-layer',
    'conf/layer.conf: LAYERDEPENDS_mnn-edge must include networking-layer',
  ]);
});

test('a recipe packaged per tune that reads MACHINE_FEATURES is reported', (t) => {
  const mnn = join('recipes-mnn', 'mnn', 'mnn_git.bb');
  const dir = brokenLayer(t, (d) =>
    rewrite(
      join(d, mnn),
      'MNN_RVV_MARCH ??= "rv64gcv"',
      `MNN_RVV_MARCH ??= "\${@bb.utils.contains('MACHINE_FEATURES', 'rvv', 'rv64gcv', 'rv64gc', d)}"`,
    ),
  );
  const got = messages(dir);
  t.is(got.length, 1, got.join('\n'));
  t.regex(
    got[0]!,
    /^recipes-mnn\/mnn\/mnn_git\.bb: line \d+: reads MACHINE or MACHINE_FEATURES, but the package is per tune/,
  );
});

test('a dynamic layer directory named in layer.conf must exist', (t) => {
  const dir = brokenLayer(t, (d) => rmSync(join(d, 'dynamic-layers', 'riscv'), { recursive: true }));
  t.deepEqual(messages(dir), [
    'conf/layer.conf: BBFILES_DYNAMIC names dynamic-layers/riscv, which does not exist',
  ]);
});

test('a shrinkwrap out of step with package-lock.json is reported', (t) => {
  const sw = join('recipes-mnn-edge', 'mnn-edge', 'mnn-edge', 'npm-shrinkwrap.json');
  const dir = brokenLayer(t, (d) => {
    const doc = JSON.parse(readFileSync(join(d, sw), 'utf8'));
    doc.packages['node_modules/ws'].version = '0.0.1';
    delete doc.packages['node_modules/mqtt'];
    writeFileSync(join(d, sw), JSON.stringify(doc));
  });
  const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8'));
  t.deepEqual(messages(dir), [
    `${sw}: node_modules/mqtt is in package-lock.json but not in the shrinkwrap`,
    `${sw}: node_modules/ws is 0.0.1 in the shrinkwrap, ${lock.packages['node_modules/ws'].version} in package-lock.json`,
  ]);
});

test('a shrinkwrap that fetches a devDependency the build does not run is reported', (t) => {
  const sw = join('recipes-mnn-edge', 'mnn-edge', 'mnn-edge', 'npm-shrinkwrap.json');
  const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8'));
  const dir = brokenLayer(t, (d) => {
    const doc = JSON.parse(readFileSync(join(d, sw), 'utf8'));
    doc.packages['node_modules/ava'] = {
      ...lock.packages['node_modules/ava'],
      resolved: 'https://x/ava.tgz',
    };
    writeFileSync(join(d, sw), JSON.stringify(doc));
  });
  t.deepEqual(messages(dir), [
    `${sw}: node_modules/ava is in the shrinkwrap but is neither a production dependency nor a build tool`,
  ]);
});

test('a new recipe is held to the same rules, common licenses included', (t) => {
  const extra = join('recipes-mnn-edge', 'extra', 'extra_1.0.bb');
  const dir = brokenLayer(t, (d) => {
    mkdirSync(join(d, 'recipes-mnn-edge', 'extra'));
    writeFileSync(
      join(d, extra),
      [
        'LICENSE = "Apache-2.0"',
        `LIC_FILES_CHKSUM = "file://\${COMMON_LICENSE_DIR}/MIT;md5=0835ade698e0bcf8506ecda2f7b4f302"`,
        'SRC_URI = "file://extra.conf"',
        'inherit systemd',
      ].join('\n'),
    );
  });
  t.deepEqual(messages(dir), [
    `${extra}: required variable SUMMARY is not set`,
    `${extra}: required variable SYSTEMD_SERVICE is not set`,
    `${extra}: LIC_FILES_CHKSUM points at MIT but LICENSE does not name it`,
    `${extra}: SRC_URI file://extra.conf is in none of extra_1.0, extra, files`,
  ]);
});

test('the recipe version follows package.json', (t) => {
  const dir = brokenLayer(t, (d) => rewrite(join(d, recipe), 'PV = "0.1.0+git"', 'PV = "0.0.9+git"'));
  t.deepEqual(messages(dir), [`${recipe}: PV 0.0.9+git does not start with package.json's version 0.1.0`]);
});
