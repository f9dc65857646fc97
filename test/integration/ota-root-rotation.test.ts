import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import test from 'ava';
import { connectAsync } from 'mqtt';
import { main } from '../../agent/cli/main.js';
import { KvStore, openStore } from '../../agent/store/database.js';
import { createMemoryLogger } from '../../lib/log.js';
import type { HealthProbe } from '../../lib/ota-ports.js';
import { ModelStore } from '../../models/index.js';
import { otaDefaults } from '../../ota/config.js';
import { attachOtaToMqtt, clientTransport } from '../../ota/jobs/mqtt-device.js';
import { createOtaDevice, storePorts } from '../../ota/module.js';
import { servePackages } from '../../ota/tools/serve.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';
import { modelFixturesDir } from '../helpers/paths.js';

// The root-of-trust ceremony end to end, as an operator runs it (`ota keygen --role`, `ota root sign`, `ota root
// rotate`, `ota sign`, `ota publish`) against a device over a real mosquitto: a targets document fast-forwarded
// to 2^53-1 blocks every update until the targets key is rotated through a new root; a rotation the old root
// keys did not sign, an old root replayed and an expired root are refused; a job whose envelope carries a
// prototype-named key is refused without storing the attacker's data.

const gate = mosquittoAvailable() ? test.serial : test.skip;
const tinyLlm = join(modelFixturesDir, 'tiny-llm');

async function cli(argv: string[]) {
  let out = '';
  let err = '';
  const sink = (add: (s: string) => void) =>
    new Writable({
      write(chunk, _enc, cb) {
        add(chunk.toString());
        cb();
      },
    });
  const code = await main(argv, {
    stdout: sink((s) => (out += s)),
    stderr: sink((s) => (err += s)),
    env: {},
  });
  return { code, out, err };
}

/** The final status line `ota publish --wait` / `ota root rotate --wait` printed for the device. */
function finalLine(out: string): string {
  const lines = out.split('\n').filter((l) => l.startsWith('dev-1  '));
  return lines.at(-1) ?? `(no status) ${out}`;
}

gate(
  'root rotation over MQTT: fast-forward recovery, bad threshold, replay, expiry, prototype keys',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ota-root-e2e-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const broker = await startMosquitto();
    t.teardown(() => broker.close());
    const keys = join(dir, 'keys');
    const k = (name: string, ext: 'key' | 'pub') => join(keys, `${name}.${ext}`);
    for (const [role, name] of [
      ['root', 'root1'],
      ['root', 'root2'],
      ['targets', 'targets1'],
      ['targets', 'targets2'],
    ] as const) {
      const r = await cli(['ota', 'keygen', '--role', role, '--name', name, '--out', keys]);
      t.is(r.code, 0, r.err);
    }
    const root = (name: string) => join(dir, `${name}.json`);
    const v1 = await cli([
      'ota',
      'root',
      'sign',
      root('root-v1'),
      '--root-keys',
      k('root1', 'pub'),
      '--targets-keys',
      k('targets1', 'pub'),
      '--key',
      k('root1', 'key'),
      '--expires',
      '30d',
    ]);
    t.is(v1.code, 0, v1.err);
    t.regex(v1.out, /^signed root version 1 .*: 1 of 1 required signature/);

    // The operator's packages and unsigned targets.
    const served = join(dir, 'served');
    const targets = join(dir, 'targets.json');
    for (const version of ['1.0.0', '2.0.0', '3.0.0']) {
      const r = await cli([
        'ota',
        'pack',
        tinyLlm,
        '--id',
        'tiny-llm',
        '--version',
        version,
        '--out',
        served,
        '--targets',
        targets,
      ]);
      t.is(r.code, 0, r.err);
    }
    const srv = await servePackages(served);
    t.teardown(() => srv.close());

    // The device ships root version 1 in its image (ota.rootFile) and no trustedKeys.
    const data = join(dir, 'device');
    const db = openStore(join(data, 'agent.db'));
    t.teardown(() => void db.close());
    const { store } = ModelStore.open({ dataDir: data, db });
    const config = {
      ...otaDefaults,
      rootFile: root('root-v1'),
      download: { ...otaDefaults.download, headroomBytes: 0 },
    };
    const probe: HealthProbe = {
      async measure(req) {
        if (!existsSync(join(store.packageDir({ id: req.modelId, version: req.version }), 'llm.mnn')))
          throw new Error('llm.mnn missing');
        return { ttftMs: 1, decodeTokensPerSecond: 100, text: 'stand-in' };
      },
    };
    const time = {
      trustedNow: () => Date.now(),
      clockStatus: () => ({ synchronized: true, evidence: 'test' }),
    };
    const logger = createMemoryLogger();
    const device = createOtaDevice({
      db,
      dataDir: data,
      config,
      facts: { deviceId: 'dev-1', tags: ['lab'], arch: process.arch },
      time,
      logger,
      ports: { ...storePorts(store, new KvStore(db), config), probe },
    });
    t.is(device.roots.current().version, 1);
    const client = await connectAsync(broker.url, { protocolVersion: 5, clientId: 'dev-1' });
    t.teardown(() => client.endAsync());
    device.runner.start();
    t.teardown(() => device.runner.stop());
    const link = attachOtaToMqtt(
      clientTransport(client),
      device.runner,
      { deviceId: 'dev-1', tags: ['lab'] },
      logger,
      {
        store: device.roots,
        now: () => time.trustedNow(),
      },
    );
    t.teardown(() => link.detach());

    const sign = async (out: string, key: string, version: string) => {
      const r = await cli([
        'ota',
        'sign',
        targets,
        '--key',
        k(key, 'key'),
        '--version',
        version,
        '--expires',
        '2d',
        '--out',
        out,
      ]);
      t.is(r.code, 0, r.err);
      return out;
    };
    const publish = async (signed: string, version: string, jobId: string) => {
      const r = await cli([
        'ota',
        'publish',
        '--targets',
        signed,
        '--package',
        `tiny-llm@${version}`,
        '--device',
        'dev-1',
        '--broker',
        broker.url,
        '--url',
        srv.baseUrl,
        '--job-id',
        jobId,
        '--wait',
        '120',
      ]);
      t.is(r.code, 0, r.err);
      return finalLine(r.out);
    };
    const rotate = async (roots: string[], jobId: string) => {
      const r = await cli([
        'ota',
        'root',
        'rotate',
        '--root',
        roots.join(','),
        '--device',
        'dev-1',
        '--broker',
        broker.url,
        '--job-id',
        jobId,
        '--wait',
        '60',
      ]);
      return { code: r.code, line: finalLine(r.out), err: r.err };
    };

    // A targets document signed at version 2^53-1 (a compromised or buggy signer) installs 1.0.0 ...
    const max = String(Number.MAX_SAFE_INTEGER);
    t.regex(
      await publish(await sign(join(dir, 't-max.json'), 'targets1', max), '1.0.0', 'job-max'),
      /^dev-1 {2}job-max {2}succeeded/,
    );
    // ... and from then on every ordinary document is a rollback.
    t.is(
      await publish(await sign(join(dir, 't5-old.json'), 'targets1', '5'), '2.0.0', 'job-stuck'),
      `dev-1  job-stuck  rejected (rollback): Targets version 5 is older than the trusted version ${max}`,
    );

    // A new root (new root key, new targets key) signed only by the NEW root key: refused.
    const bad = await cli([
      'ota',
      'root',
      'sign',
      root('root-v1'),
      '--bump',
      '--root-keys',
      k('root2', 'pub'),
      '--targets-keys',
      k('targets2', 'pub'),
      '--key',
      k('root2', 'key'),
      '--out',
      root('root-v2-bad'),
    ]);
    t.is(bad.code, 0, bad.err);
    const refused = await rotate([root('root-v2-bad')], 'rot-bad');
    t.is(refused.code, 1);
    t.regex(
      refused.line,
      /^dev-1 {2}rot-bad {2}rejected \(unknown-key\): New root \(by the keys of trusted root version 1\) is signed only by unknown key\(s\) [0-9a-f]{12}$/,
    );
    t.is(device.roots.current().version, 1);

    // The same root co-signed by the old root key: trusted, and the targets history starts over.
    const good = await cli([
      'ota',
      'root',
      'sign',
      root('root-v2-bad'),
      '--key',
      k('root1', 'key'),
      '--out',
      root('root-v2'),
    ]);
    t.is(good.code, 0, good.err);
    t.regex(good.out, /signed root version 2 .*: 1 of 1 required signature\(s\) by its root keys, 2 in all/);
    const rotated = await rotate([root('root-v2')], 'rot-good');
    t.is(rotated.code, 0, rotated.err);
    t.is(
      rotated.line,
      'dev-1  rot-good  succeeded: root version 1 -> 2; targets keys changed, targets version history reset',
    );
    t.is(device.roots.current().version, 2);

    // Recovered: version 5 signed by the new targets key installs; the old targets key no longer counts.
    t.regex(
      await publish(await sign(join(dir, 't5-new.json'), 'targets2', '5'), '2.0.0', 'job-recovered'),
      /^dev-1 {2}job-recovered {2}succeeded/,
    );
    t.regex(
      await publish(await sign(join(dir, 't6-old.json'), 'targets1', '6'), '3.0.0', 'job-oldkey'),
      /^dev-1 {2}job-oldkey {2}rejected \(unknown-key\): Targets are signed only by unknown key\(s\) [0-9a-f]{12}$/,
    );

    // The old root replayed: refused.
    const replay = await rotate([root('root-v1')], 'rot-replay');
    t.is(replay.code, 1);
    t.is(
      replay.line,
      'dev-1  rot-replay  rejected (rollback): Root version 1 is not newer than the trusted root version 2',
    );

    // A correctly signed root that has already expired: refused, version 2 stays.
    const expired = await cli([
      'ota',
      'root',
      'sign',
      root('root-v2'),
      '--bump',
      '--expires',
      '2026-01-01T00:00:00Z',
      '--key',
      k('root2', 'key'),
      '--out',
      root('root-v3-expired'),
    ]);
    t.is(expired.code, 0, expired.err);
    const late = await rotate([root('root-v3-expired')], 'rot-expired');
    t.is(late.code, 1);
    t.regex(
      late.line,
      /^dev-1 {2}rot-expired {2}rejected \(expired\): Root version 3 expired at 2026-01-01T00:00:00\.000Z; now is /,
    );
    t.is(device.roots.current().version, 2);

    // Prototype-named keys in the unsigned envelope of a job: refused, and nothing of them stored as trusted.
    const signed7 = JSON.parse(
      readFileSync(await sign(join(dir, 't7.json'), 'targets2', '7'), 'utf8'),
    ) as object;
    for (const key of ['constructor', '__proto__', 'toString']) {
      const path = join(dir, `t-proto-${key}.json`);
      writeFileSync(path, `${JSON.stringify(signed7).slice(0, -1)},"${key}":{"attacker":"data"}}`);
      t.is(
        await publish(path, '3.0.0', `job-proto-${key.replace(/_/g, 'u')}`),
        `dev-1  job-proto-${key.replace(/_/g, 'u')}  rejected (malformed): Targets envelope is malformed: ${key}: is not a known key (expected one of: signed, signatures)`,
      );
    }
    const trusted = db.prepare('SELECT version, document FROM ota_trust').get() as {
      version: number;
      document: string;
    };
    t.is(trusted.version, 5);
    t.false(trusted.document.includes('attacker'));
    t.deepEqual(
      store.list().map((p) => p.version),
      ['1.0.0', '2.0.0'],
    );
  },
);
