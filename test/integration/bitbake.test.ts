import { spawnSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { repoRoot } from '../helpers/paths.js';

// The layer under the real BitBake, where poky and meta-openembedded (scarthgap) are checked out:
//   YOCTO_LAYERS_DIR       directory with poky/ and meta-openembedded/ (required; the test skips without it)
//   YOCTO_USER             account BitBake runs as when this runs as root (BitBake refuses root); default: the
//                          owner of YOCTO_LAYERS_DIR/poky
//   YOCTO_BUILD_DIR        build directory to reuse (BitBake's parse cache makes reruns fast); default: a temp dir.
//                          Its conf/ is used as it is when it has one (then it must set BB_NO_NETWORK = "1" and
//                          list this layer, which the test checks); otherwise the test writes it
//   MNN_EDGE_BITBAKE_MACHINES   machines to parse in FULL mode; default "qemuarm64 qemux86-64"
//   MNN_EDGE_BITBAKE_FULL  "1": also `bitbake -p` for qemuarm64 and qemux86-64, `bitbake -g mnn-edge-image`,
//                          `bitbake -e mnn` (a full parse of ~2,700 recipes, minutes per MACHINE on a small host)
//                          and the whole yocto-check-layer for qemux86-64 (world signatures with and without the
//                          layer: an hour or more on a small shared host)
// Without FULL the test still checks what needs no recipe parse: BitBake accepts the layer's configuration
// (LAYERDEPENDS, LAYERSERIES_COMPAT, BBFILES_DYNAMIC) offline with the two other meta-openembedded layers, and
// yocto-check-layer's own README, LAYERSERIES_COMPAT and environment test cases pass on it (the tool itself
// computes world signatures before any test, so the subset runs its cases through test/helpers).

const layersDir = process.env['YOCTO_LAYERS_DIR'];
const full = process.env['MNN_EDGE_BITBAKE_FULL'] === '1';
const ourLayer = join(repoRoot, 'yocto', 'meta-mnn-edge');

interface Setup {
  poky: string;
  oe: string;
  user: string | undefined;
  buildDir: string;
}

/** Why the test cannot run here, or what it runs with. */
function setup(): string | Setup {
  if (!layersDir)
    return 'YOCTO_LAYERS_DIR is not set (a directory with poky/ and meta-openembedded/ at scarthgap)';
  const poky = join(layersDir, 'poky');
  const oe = join(layersDir, 'meta-openembedded');
  if (!existsSync(join(poky, 'bitbake', 'bin', 'bitbake'))) return `${poky} has no bitbake/bin/bitbake`;
  for (const l of ['meta-oe', 'meta-python', 'meta-networking']) {
    if (!existsSync(join(oe, l, 'conf', 'layer.conf'))) return `${oe} has no ${l}`;
  }
  let user: string | undefined;
  if (userInfo().uid === 0) {
    user = process.env['YOCTO_USER'];
    if (!user) {
      const owner = statSync(poky).uid;
      if (owner === 0) return `BitBake refuses root and ${poky} is owned by root; set YOCTO_USER`;
      const name = spawnSync('id', ['-nu', String(owner)], { encoding: 'utf8' });
      if (name.status !== 0) return `the owner of ${poky} (uid ${owner}) has no account name`;
      user = name.stdout.trim();
    }
    if (
      spawnSync('runuser', ['-u', user, '--', 'test', '-r', join(ourLayer, 'conf', 'layer.conf')]).status !==
      0
    )
      return `${user} cannot read ${ourLayer}`;
  }
  let buildDir = process.env['YOCTO_BUILD_DIR'];
  if (!buildDir) {
    buildDir = mkdtempSync(join(tmpdir(), 'mnn-edge-bitbake-'));
    test.after.always(() => rmSync(buildDir!, { recursive: true, force: true }));
  }
  const prepared =
    existsSync(join(buildDir, 'conf', 'bblayers.conf')) && existsSync(join(buildDir, 'conf', 'local.conf'));
  if (prepared) return { poky, oe, user, buildDir };
  mkdirSync(join(buildDir, 'conf'), { recursive: true });
  writeFileSync(
    join(buildDir, 'conf', 'bblayers.conf'),
    [
      'POKY_BBLAYERS_CONF_VERSION = "2"',
      `BBPATH = "\${TOPDIR}"`,
      'BBFILES ?= ""',
      `BBLAYERS ?= "${[join(poky, 'meta'), join(poky, 'meta-poky'), ...['meta-oe', 'meta-python', 'meta-networking'].map((l) => join(oe, l)), ourLayer].join(' ')}"`,
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(buildDir, 'conf', 'local.conf'),
    [
      'MACHINE ??= "qemux86-64"',
      'DISTRO ?= "poky"',
      // The recipes need systemd with usrmerge; a distro without them skips them.
      'INIT_MANAGER = "systemd"',
      'BB_NO_NETWORK = "1"',
      'CONNECTIVITY_CHECK_URIS = ""',
      'CONF_VERSION = "2"',
      '',
    ].join('\n'),
  );
  if (user !== undefined) chownConf(user, buildDir);
  return { poky, oe, user, buildDir };
}

/** A build directory written by root belongs to the BitBake user, who writes its tmp/ and cache/ there. */
function chownConf(user: string, buildDir: string): void {
  const id = Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout);
  const gid = Number(spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout);
  for (const p of ['', 'conf', join('conf', 'bblayers.conf'), join('conf', 'local.conf')])
    chownSync(join(buildDir, p), id, gid);
}

interface Run {
  status: number | null;
  output: string;
}

function bitbake(s: Setup, machine: string, args: string[], timeoutMs = 60 * 60_000): Run {
  const env = {
    PATH: `${join(s.poky, 'bitbake', 'bin')}:${join(s.poky, 'scripts')}:${process.env['PATH']}`,
    LANG: 'en_US.UTF-8',
    LC_ALL: 'en_US.UTF-8',
    MACHINE: machine,
    BB_ENV_PASSTHROUGH_ADDITIONS: 'MACHINE',
    BUILDDIR: s.buildDir,
    HOME: s.buildDir,
  };
  const [cmd, ...rest] =
    s.user === undefined
      ? args
      : ['runuser', '-u', s.user, '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...args];
  const r = spawnSync(cmd!, rest, {
    cwd: s.buildDir,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: timeoutMs,
    maxBuffer: 512 * 1024 * 1024,
  });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}`;
  // BitBake's client waits 60 s for its server's reply; a server starved of CPU misses that on a loaded host.
  const starved = output.includes('Timeout while waiting for a reply from the bitbake server');
  return {
    status: r.status,
    output: starved
      ? `${output}\n(the BitBake server got no CPU for 60 s: the host is overloaded, not the layer broken; rerun when it is quieter)`
      : output,
  };
}

/** ERROR and WARNING lines of a BitBake run (the summary line counts them but names nothing). */
const problems = (output: string) => output.split('\n').filter((l) => /^(ERROR|WARNING):/.test(l));

const s = setup();
const machines = (process.env['MNN_EDGE_BITBAKE_MACHINES'] ?? 'qemuarm64 qemux86-64')
  .split(/\s+/)
  .filter(Boolean);

// One BitBake step per test: each reports on its own, and with a warm parse cache each fits AVA's timeout (a
// first parse does not: run FULL with `npx ava --timeout=2h test/integration/bitbake.test.ts`).
test.serial('BitBake accepts the layer configuration offline', (t) => {
  if (typeof s === 'string') {
    t.log(`bitbake: skipped: ${s}`);
    t.pass();
    return;
  }
  // Layer configuration: dependencies and series are checked when BitBake reads bblayers.conf.
  const layers = bitbake(s, 'qemux86-64', ['bitbake-layers', 'show-layers']);
  t.is(layers.status, 0, layers.output.slice(-3000));
  // This checkout's layer, not another copy a prepared build directory might name.
  t.true(
    layers.output.split('\n').some((l) => /^mnn-edge\s/.test(l) && l.split(/\s+/)[1] === ourLayer),
    layers.output.slice(-2000),
  );
  const env = bitbake(s, 'qemux86-64', ['bitbake', '-e']);
  t.is(env.status, 0, env.output.slice(-3000));
  t.deepEqual(problems(env.output), []);
  t.regex(env.output, /^BB_NO_NETWORK="1"$/m, 'the checks run offline');
});

// The yocto-check-layer cases that need no recipe parse, run by the tool's own code in the prepared build
// directory (which already lists the layer and its dependencies).
test.serial("yocto-check-layer's README, LAYERSERIES_COMPAT and environment cases", (t) => {
  if (typeof s === 'string') {
    t.pass();
    return;
  }
  const cases = ['test_readme', 'test_layerseries_compat', 'test_show_environment'];
  const run = bitbake(s, 'qemux86-64', [
    'python3',
    join(repoRoot, 'test', 'helpers', 'check-layer-subset.py'),
    s.poky,
    ourLayer,
    ...cases,
  ]);
  t.is(run.status, 0, run.output.slice(-4000));
  for (const c of cases)
    t.regex(run.output, new RegExp(`^${c} \\(common\\.CommonCheckLayer\\.${c}\\)\\n \\.\\.\\. ok$`, 'm'));
  t.regex(run.output, /^meta-mnn-edge: 3 run, PASS$/m);
  if (!full) {
    t.log(
      'bitbake: layer configuration and the yocto-check-layer README/series/environment cases checked; full parse and the whole yocto-check-layer skipped (set MNN_EDGE_BITBAKE_FULL=1)',
    );
  }
});

if (typeof s !== 'string' && full) {
  for (const machine of machines) {
    test.serial(`bitbake -p for ${machine}: every recipe parses offline, no error or warning`, (t) => {
      const parse = bitbake(s, machine, ['bitbake', '-p']);
      t.is(parse.status, 0, `${machine}: ${parse.output.slice(-3000)}`);
      t.deepEqual(problems(parse.output), []);
      // A run that finds every recipe in the parse cache prints no parse summary: that cache was written by a
      // parse of the same files and configuration, and BitBake only caches recipes that parsed.
      const summary = /Parsing of (\d+) \.bb files complete.*?(\d+) errors?\./s.exec(parse.output);
      const cached = /Loaded (\d+) entries from dependency cache/.exec(parse.output);
      t.true(summary !== null || cached !== null, parse.output.slice(-2000));
      if (summary) t.is(summary[2], '0');
      t.log(
        `bitbake -p ${machine}: ${summary ? `${summary[1]} recipes, ${summary[2]} errors` : `all ${cached?.[1]} targets from the parse cache`}`,
      );
    });
  }

  const machine = machines[0]!;
  test.serial(
    `bitbake -g mnn-edge-image (${machine}): engine and agent in the graph, no base-extended`,
    (t) => {
      const graph = bitbake(s, machine, ['bitbake', '-g', 'mnn-edge-image']);
      t.is(graph.status, 0, graph.output.slice(-3000));
      t.deepEqual(problems(graph.output), []);
      const recipes = readFileSync(join(s.buildDir, 'pn-buildlist'), 'utf8').split('\n').filter(Boolean);
      t.log(`bitbake -g mnn-edge-image: ${recipes.length} recipes`);
      for (const pn of ['mnn', 'mnn-edge', 'nodejs', 'packagegroup-mnn-edge', 'packagegroup-core-boot'])
        t.true(recipes.includes(pn), `${pn} is in the image's graph`);
      t.false(
        recipes.includes('packagegroup-base'),
        'the minimal image does not pull packagegroup-base(-extended)',
      );
    },
  );

  test.serial(`bitbake -e mnn (${machine}): backends, CMake flags, loader package, pinned commit`, (t) => {
    // poky enables Vulkan: the engine gets the backend and the package with the loader name MNN dlopens.
    const mnn = bitbake(s, machine, ['bitbake', '-e', 'mnn']);
    t.is(mnn.status, 0, mnn.output.slice(-3000));
    const value = (name: string) => new RegExp(`^${name}="([^"]*)"$`, 'm').exec(mnn.output)?.[1] ?? '';
    t.deepEqual(value('PACKAGECONFIG').split(/\s+/).filter(Boolean).sort(), [
      'audio',
      'imgcodecs',
      'llm',
      'omni',
      'vulkan',
    ]);
    const cpuFlag = machine.includes('arm64') ? '-DMNN_ARM82=ON' : '-DMNN_AVX2=ON';
    for (const flag of [
      '-DMNN_BUILD_LLM=ON',
      '-DMNN_VULKAN=ON',
      '-DMNN_OPENCL=OFF',
      '-DMNN_SEP_BUILD=OFF',
      cpuFlag,
    ])
      t.true(value('EXTRA_OECMAKE').split(/\s+/).includes(flag), flag);
    t.regex(value('PACKAGES'), /\bmnn-vulkan\b/);
    t.regex(value('RDEPENDS:mnn-vulkan'), /\bvulkan-loader\b/);
    t.is(value('SRCREV'), '4d40bdbd7efb73a58383bb5da867a6f41eb1776e');
  });

  // The whole tool, as a layer's maintainer runs it: its own build directory without the layer (the tool adds
  // the dependencies, takes world signatures, adds the layer, then runs every software-layer case, signatures
  // and world included).
  test.serial('yocto-check-layer (qemux86-64): every software-layer case passes', (t) => {
    const checkDir = join(s.buildDir, 'check-layer');
    mkdirSync(join(checkDir, 'conf'), { recursive: true });
    writeFileSync(
      join(checkDir, 'conf', 'bblayers.conf'),
      [
        'POKY_BBLAYERS_CONF_VERSION = "2"',
        `BBPATH = "\${TOPDIR}"`,
        'BBFILES ?= ""',
        `BBLAYERS ?= "${join(s.poky, 'meta')} ${join(s.poky, 'meta-poky')}"`,
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(checkDir, 'conf', 'local.conf'),
      readFileSync(join(s.buildDir, 'conf', 'local.conf'), 'utf8').replace(
        /^MACHINE\s*\?*=.*$/m,
        'MACHINE = "qemux86-64"',
      ),
    );
    if (s.user !== undefined) chownConf(s.user, checkDir);
    const check = bitbake(
      { ...s, buildDir: checkDir },
      'qemux86-64',
      [
        'yocto-check-layer',
        '--no-auto-dependency',
        '--dependency',
        ...['meta-oe', 'meta-python', 'meta-networking'].map((l) => join(s.oe, l)),
        '--',
        ourLayer,
      ],
      6 * 60 * 60_000,
    );
    const results = check.output
      .split('\n')
      .filter((l) => /^INFO: (test_\w+ \(|\s*\.\.\. |meta-mnn-edge \.\.\. )/.test(l));
    t.log(results.join('\n'));
    t.is(check.status, 0, check.output.slice(-5000));
    t.regex(check.output, /^INFO: meta-mnn-edge \.\.\. PASS$/m);
    t.notRegex(check.output, /\.\.\. (FAIL|ERROR)$/m);
  });
}
