import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { parseConfig } from '../../agent/config/load.js';
import { buildToolKeys, shippedKeys } from '../../scripts/build-shrinkwrap.js';
import {
  manifestPath,
  type PackageLock,
  productionPackages,
  recipeDir,
  shrinkwrapFromLock,
} from '../../scripts/stage.js';
import { parseStageManifest } from '../../scripts/stage-manifest.js';

const files = join(recipeDir, 'files');

/** systemd unit file → section → key → values (keys may repeat, as Environment= does). */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const out: Record<string, Record<string, string[]>> = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      out[section] = out[section] ?? {};
      continue;
    }
    const eq = line.indexOf('=');
    const key = line.slice(0, eq);
    const values = out[section] ?? {};
    out[section] = values;
    values[key] = [...(values[key] ?? []), line.slice(eq + 1)];
  }
  return out;
}

test('the project manifest parses and names the app directory npm installs into', (t) => {
  const m = parseStageManifest(readFileSync(manifestPath, 'utf8'));
  t.is(m.app, '/usr/lib/node_modules/mnn-edge');
  t.deepEqual(
    m.entries
      .filter((e) => e.kind === 'keep')
      .map((e) => (e.kind === 'keep' ? `${e.path}${e.optional ? '?' : ''}` : '')),
    ['package.json', 'dist', 'node_modules', 'dashboard/dist', 'engine/build/Release/mnn_edge_engine.node?'],
  );
  t.true(m.entries.some((e) => e.kind === 'file' && e.dest === '/usr/lib/systemd/system/mnn-edge.service'));
});

test('manifest errors name the line and what was expected', (t) => {
  t.throws(() => parseStageManifest('keep dist\n'), { message: 'stage-manifest.txt: no "app DIR" line' });
  t.throws(() => parseStageManifest('app usr/lib\n'), {
    message: 'stage-manifest.txt:1: the app directory must be an absolute path, got "usr/lib"',
  });
  t.throws(() => parseStageManifest('app /a\nkeep ../etc\n'), {
    message: 'stage-manifest.txt:2: a kept path must be a relative path inside the tree, got "../etc"',
  });
  t.throws(() => parseStageManifest('app /a\nfile 644 layer:x /etc/x\n'), {
    message: 'stage-manifest.txt:2: file mode must be octal like 0644, got "644"',
  });
  t.throws(() => parseStageManifest('app /a\nfile 0644 host:x /etc/x\n'), {
    message: 'stage-manifest.txt:2: file source must be layer:NAME or src:PATH, got "host:x"',
  });
  t.throws(() => parseStageManifest('app /a\nfile 0644 layer:x /etc/x\nlink y /etc/x\n'), {
    message: 'stage-manifest.txt:3: /etc/x is installed twice',
  });
  t.throws(() => parseStageManifest('app /a\ncopy a b\n'), {
    message: 'stage-manifest.txt:2: unknown entry kind "copy" (expected app, keep, keep?, file, link)',
  });
  t.throws(() => parseStageManifest('app /a\nlink x\n'), {
    message: 'stage-manifest.txt:2: expected "link TARGET DEST", got "link x"',
  });
});

const lock: PackageLock = {
  lockfileVersion: 3,
  packages: {
    '': {
      version: '0.1.0',
      devDependencies: { typescript: '5', 'esbuild-wasm': '0', ava: '7', '@types/ws': '8' },
    },
    'node_modules/ws': { version: '8.0.0', integrity: 'sha512-a', license: 'MIT' },
    'node_modules/@scope/pkg': { version: '1.2.3', integrity: 'sha512-b', license: 'ISC' },
    'node_modules/ws/node_modules/nested': {
      version: '2.0.0',
      integrity: 'sha512-c',
      resolved: 'https://x/n.tgz',
    },
    'node_modules/typescript': { version: '5.9.0', integrity: 'sha512-d', dev: true },
    'node_modules/esbuild-wasm': { version: '0.28.0', integrity: 'sha512-e', dev: true },
    'node_modules/ava': {
      version: '7.0.0',
      integrity: 'sha512-f',
      dev: true,
      dependencies: { 'ava-dep': '1' },
    },
    'node_modules/ava-dep': { version: '1.0.0', integrity: 'sha512-g', dev: true },
    'node_modules/@types/ws': {
      version: '8.0.0',
      integrity: 'sha512-h',
      dev: true,
      dependencies: { '@types/node': '20' },
    },
    'node_modules/@types/node': { version: '20.0.0', integrity: 'sha512-i', dev: true },
  },
};

test('production packages leave out devDependencies', (t) => {
  t.deepEqual(productionPackages(lock), [
    'node_modules/@scope/pkg',
    'node_modules/ws',
    'node_modules/ws/node_modules/nested',
  ]);
});

test('the shrinkwrap gets registry tarball URLs where the lock has none and keeps the ones it has', (t) => {
  const sw = shrinkwrapFromLock(lock);
  t.is(sw.packages['node_modules/ws']?.resolved, 'https://registry.npmjs.org/ws/-/ws-8.0.0.tgz');
  t.is(
    sw.packages['node_modules/@scope/pkg']?.resolved,
    'https://registry.npmjs.org/@scope/pkg/-/pkg-1.2.3.tgz',
  );
  t.is(sw.packages['node_modules/ws/node_modules/nested']?.resolved, 'https://x/n.tgz');
  t.is(sw.packages['node_modules/typescript']?.integrity, 'sha512-d');
  t.throws(() => shrinkwrapFromLock({ lockfileVersion: 1, packages: {} }), {
    message: 'package-lock.json lockfileVersion 1 is too old: the npmsw fetcher needs 2 or later',
  });
  t.throws(
    () => shrinkwrapFromLock({ lockfileVersion: 3, packages: { 'node_modules/x': { version: '1' } } }),
    {
      message: 'package-lock.json: node_modules/x has no integrity; regenerate the lock with npm install',
    },
  );
});

test('the build shrinkwrap keeps production packages and the build tools with their dependencies only', (t) => {
  const sw = shrinkwrapFromLock(lock);
  t.deepEqual(Object.keys(sw.packages).sort(), [
    '',
    'node_modules/@scope/pkg',
    'node_modules/@types/node',
    'node_modules/@types/ws',
    'node_modules/esbuild-wasm',
    'node_modules/typescript',
    'node_modules/ws',
    'node_modules/ws/node_modules/nested',
  ]);
  t.deepEqual(
    sw.packages['']?.devDependencies,
    { typescript: '5', 'esbuild-wasm': '0', '@types/ws': '8' },
    'the root lists only the dev packages that are fetched',
  );
  const noTool = structuredClone(lock);
  delete noTool.packages['']!.devDependencies!['esbuild-wasm'];
  t.throws(() => shrinkwrapFromLock(noTool), {
    message: 'package.json no longer lists the build tool esbuild-wasm; update BUILD_TOOLS',
  });
});

test('the committed shrinkwrap is what --write-shrinkwrap produces from package-lock.json', (t) => {
  const current = JSON.parse(readFileSync(join(recipeDir, 'mnn-edge', 'npm-shrinkwrap.json'), 'utf8'));
  const lockFile = JSON.parse(
    readFileSync(join(recipeDir, '..', '..', '..', '..', 'package-lock.json'), 'utf8'),
  );
  t.deepEqual(current, shrinkwrapFromLock(lockFile));
});

test('both image configurations are valid agent configurations', (t) => {
  for (const name of ['agent.json', 'agent-mosquitto.json']) {
    const config = parseConfig(JSON.parse(readFileSync(join(files, name), 'utf8')), name, {});
    t.is(config.dataDir, '/var/lib/mnn-edge', name);
    t.true(config.http.mdns, `${name}: mDNS is on in the image`);
  }
  const local = parseConfig(JSON.parse(readFileSync(join(files, 'agent-mosquitto.json'), 'utf8')), 'x', {});
  t.is(local.mqtt.url, 'mqtt://127.0.0.1:1883');
  t.false(local.mqtt.embeddedBroker.enabled);
});

test('the unit is Type=notify with a watchdog, a privileged detect step and the data dir writable', (t) => {
  const unit = parseUnit(readFileSync(join(files, 'mnn-edge.service'), 'utf8'));
  const s = unit['Service']!;
  t.deepEqual(s['Type'], ['notify']);
  t.deepEqual(s['NotifyAccess'], ['all'], 'systemd-notify is a child of the agent');
  t.deepEqual(s['WatchdogSec'], ['3min']);
  t.deepEqual(s['Restart'], ['on-failure']);
  t.deepEqual(s['User'], ['mnn-edge']);
  t.deepEqual(s['SupplementaryGroups'], ['video audio render']);
  t.deepEqual(s['ExecStartPre'], [
    '+/usr/bin/mnn-edge detect --write-cache /var/lib/mnn-edge/capabilities.json',
  ]);
  const node = '/usr/bin/node --max-semi-space-size=1 --optimize-for-size --no-opt --no-short-builtin-calls';
  const cli = '/usr/lib/node_modules/mnn-edge/dist/agent/cli/mnn-edge.js';
  t.deepEqual(s['ExecStart'], [`${node} ${cli} run --config /etc/mnn-edge/agent.json`]);
  t.deepEqual(s['ProtectSystem'], ['strict']);
  t.deepEqual(s['ReadWritePaths'], ['/var/lib/mnn-edge']);
  for (const key of ['PrivateTmp', 'NoNewPrivileges', 'ProtectHome']) t.deepEqual(s[key], ['yes'], key);
  t.is(s['MemoryDenyWriteExecute'], undefined, "V8's JIT needs W+X pages");
  const tmpfiles = readFileSync(join(files, 'mnn-edge.tmpfiles'), 'utf8');
  t.regex(tmpfiles, /^d \/var\/lib\/mnn-edge 0750 mnn-edge mnn-edge -$/m);
  const sysusers = readFileSync(join(files, 'mnn-edge.sysusers'), 'utf8');
  for (const g of ['video', 'audio', 'render']) t.regex(sysusers, new RegExp(`^m mnn-edge ${g}$`, 'm'));
});

test('the local-broker drop-in points the agent at the mosquitto configuration', (t) => {
  const dropIn = parseUnit(readFileSync(join(files, 'mnn-edge-local-mosquitto.conf'), 'utf8'));
  // The drop-in replaces the whole command, so it must carry the unit's node and V8 flags too.
  const unit = parseUnit(readFileSync(join(files, 'mnn-edge.service'), 'utf8'));
  const main = unit['Service']!['ExecStart']![0]!;
  t.deepEqual(dropIn['Service']!['ExecStart'], [
    '',
    main.replace('/etc/mnn-edge/agent.json', '/etc/mnn-edge/agent-mosquitto.json'),
  ]);
  const conf = readFileSync(join(files, 'mosquitto.conf'), 'utf8');
  t.regex(conf, /^listener 1883 127\.0\.0\.1$/m);
  t.regex(conf, /^acl_file \/etc\/mnn-edge\/mosquitto\.acl$/m);
  // Without it a second QoS 1 acknowledgement in flight waits ~40 ms (docs/FLEET.md).
  t.regex(conf, /^set_tcp_nodelay true$/m);
});

test('a package bundled into the agent is fetched for the build and shipped (licensed) with its dependencies', (t) => {
  const withBundle: PackageLock = {
    lockfileVersion: 3,
    packages: {
      ...lock.packages,
      '': { ...lock.packages[''], devDependencies: { ...lock.packages['']?.devDependencies, sdk: '1' } },
      'node_modules/sdk': { version: '1.0.0', integrity: 'sha512-s', dev: true, dependencies: { zod: '3' } },
      'node_modules/zod': { version: '3.0.0', integrity: 'sha512-z', dev: true, license: 'MIT' },
    },
  };
  t.true(buildToolKeys(withBundle, ['sdk']).includes('node_modules/zod'), 'fetched for the bundle step');
  const shipped = shippedKeys(withBundle, ['sdk']);
  t.true(shipped.includes('node_modules/sdk') && shipped.includes('node_modules/zod'));
  t.false(shipped.includes('node_modules/ava'), 'a plain devDependency is not shipped');
  t.deepEqual(shippedKeys(withBundle, []), productionPackages(withBundle));
  t.deepEqual(productionPackages(withBundle), productionPackages(lock), 'never installed on the board');
});
