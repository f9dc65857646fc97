import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import test, { type ExecutionContext } from 'ava';
import { main } from '../../agent/cli/main.js';
import { defaultDataDir } from '../../agent/config/defaults.js';
import { loadConfig, parseConfig } from '../../agent/config/load.js';

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function cli(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await main(argv, { stdout, stderr, env });
  return { code, out, err };
}

test('data dir: /var/lib/mnn-edge for root, XDG or ~/.local/share for users, env override first', (t) => {
  t.is(defaultDataDir({}, 0), '/var/lib/mnn-edge');
  t.is(defaultDataDir({ XDG_DATA_HOME: '/x' }, 1000), '/x/mnn-edge');
  t.regex(defaultDataDir({}, 1000), /\/\.local\/share\/mnn-edge$/);
  t.is(defaultDataDir({ MNN_EDGE_DATA_DIR: '/d' }, 0), '/d');
});

test('defaults: port 8080 on all interfaces, 20 MiB uploads, 7-day sessions, no broker URL', (t) => {
  const config = parseConfig({}, 'test', {});
  t.like(config.http, { bind: '0.0.0.0', port: 8080, maxUploadBytes: 20 * 1024 * 1024, sessionTtlS: 604800 });
  t.is(config.mqtt.url, undefined);
  t.is(config.root, '/');
});

test('errors name the bad key and what was expected', (t) => {
  t.throws(() => parseConfig({ http: { port: 'eighty', sesionTtlS: 5 } }, 'agent.json', {}), {
    message:
      'Invalid configuration in agent.json: http.port: expected integer, got string "eighty"; http.sesionTtlS: is not a known key (expected one of: bind, port, tls, mdns, maxUploadBytes, maxWsMessageBytes, maxSessions, sessionTtlS, metricsToken)',
  });
  t.throws(() => parseConfig({ http: { sessionTtlS: 10 } }, 'agent.json', {}), {
    message: 'Invalid configuration in agent.json: http.sessionTtlS: expected a number >= 60, got 10',
  });
  t.throws(() => parseConfig({ deviceId: 'a b' }, 'x', {}), {
    message:
      'Invalid configuration in x: deviceId: expected a string matching /^[A-Za-z0-9_.:-]{1,64}$/, got "a b"',
  });
});

test('a config file that is missing or not JSON is reported with its path', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.json');
  t.throws(() => loadConfig({ path, env: {} }), {
    message: new RegExp(`^Cannot read configuration file ${path}: ENOENT`),
  });
  writeFileSync(path, '{ "http": ');
  t.throws(() => loadConfig({ path, env: {} }), {
    message: new RegExp(`^Configuration file ${path} is not valid JSON: `),
  });
});

test('`config --check` refuses a file whose top level is not an object: array, string, null, number', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.json');
  for (const [text, found] of [
    ['[]', 'an array'],
    ['"hello"', 'a string'],
    ['null', 'null'],
    ['42', 'a number'],
  ] as const) {
    writeFileSync(path, text);
    const r = await cli(['config', '--check', '--config', path, '--data-dir', join(dir, 'd')]);
    t.is(r.code, 1, text);
    t.is(r.out, '', text);
    t.is(
      r.err,
      `mnn-edge config: Configuration file ${path} must hold a JSON object ({ ... }) at the top level, found ${found}\n`,
    );
  }
  writeFileSync(path, '{}');
  const ok = await cli(['config', '--check', '--config', path, '--data-dir', join(dir, 'd')]);
  t.is(ok.out, `configuration OK (${path}; run-time settings revision 0)\n`);
});

test('flags win over the file', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.json');
  writeFileSync(path, JSON.stringify({ http: { port: 9000, bind: '127.0.0.1' }, tags: ['a'] }));
  const { config, source } = loadConfig({ path, overrides: { http: { port: 9001 } }, env: {} });
  t.is(source, path);
  t.like(config, { tags: ['a'], http: { port: 9001, bind: '127.0.0.1', maxUploadBytes: 20 * 1024 * 1024 } });
});

test('`mnn-edge config` prints the effective config with secrets masked; --check and --schema', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.json');
  writeFileSync(
    path,
    JSON.stringify({ mqtt: { url: 'mqtts://broker:8883', password: 'hunter2', key: '/etc/k.pem' } }),
  );
  const shown = await cli(['config', '--json', '--config', path, '--data-dir', join(dir, 'd')]);
  t.is(shown.code, 0);
  const printed = JSON.parse(shown.out) as { dataDir: string; mqtt: { password: string; key: string } };
  t.is(printed.mqtt.password, '***');
  t.is(printed.mqtt.key, '/etc/k.pem');
  t.is(printed.dataDir, join(dir, 'd'));
  t.deepEqual(await cli(['config', '--config', path, '--check']), {
    code: 0,
    out: `configuration OK (${path}; run-time settings revision 0)\n`,
    err: '',
  });
  const schema = await cli(['config', '--schema']);
  t.is((JSON.parse(schema.out) as { title: string }).title, 'mnn-edge agent configuration');
  writeFileSync(path, JSON.stringify({ http: { port: -1 } }));
  t.deepEqual(await cli(['config', '--config', path, '--check']), {
    code: 1,
    out: '',
    err: `mnn-edge config: Invalid configuration in ${path}: http.port: expected a number >= 0, got -1\n`,
  });
});

test('`mnn-edge run --port` rejects a non-port with usage exit code 2', async (t) => {
  const res = await cli(['run', '--port', '80a', '--data-dir', tempDir(t)]);
  t.is(res.code, 2);
  t.is(
    res.err,
    'mnn-edge run: --port expects an integer 0-65535, got "80a"\nUsage: mnn-edge run [--config FILE] [--root DIR] [--port N] [--bind ADDR] [--data-dir DIR]\n',
  );
});

test('`mnn-edge token` creates the token on first use and prints the same one afterwards', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const first = await cli(['token', '--data-dir', dataDir]);
  t.is(first.code, 0);
  t.regex(first.out, /^[A-Za-z0-9_-]{43}\n$/);
  t.is(first.err, `created a new pairing token in ${join(dataDir, 'pairing-token')}\n`);
  const again = await cli(['token', '--data-dir', dataDir]);
  t.deepEqual(again, { code: 0, out: first.out, err: '' });
  const extra = await cli(['token', 'now']);
  t.is(extra.code, 2);
  const rotated = await cli(['token', '--data-dir', dataDir, '--rotate']);
  t.is(rotated.code, 0);
  t.regex(rotated.out, /^[A-Za-z0-9_-]{43}\n$/);
  t.not(rotated.out, first.out);
  t.is(
    rotated.err,
    `wrote a new pairing token to ${join(dataDir, 'pairing-token')}; every browser login is now invalid. Restart the agent (systemctl restart mnn-edge) for it to take effect.\n`,
  );
  t.deepEqual(await cli(['token', '--data-dir', dataDir]), { code: 0, out: rotated.out, err: '' });
});
