import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import { Downloader } from '../../lib/download/downloader.js';
import { ModelStore } from '../../models/index.js';
import { pullPackage } from '../../ota/jobs/pull-package.js';
import { ModelStoreInstaller } from '../../ota/jobs/store-adapter.js';
import { packModel } from '../../ota/tools/pack.js';
import { handlePackageRequest, servePackages } from '../../ota/tools/serve.js';
import { TrustStore, trustPolicyFromConfig } from '../../ota/trust/trust.js';
import { modelFixturesDir } from '../helpers/paths.js';
import { selfSignedCert } from '../helpers/tls.js';

const time = { trustedNow: () => Date.now(), clockStatus: () => ({ synchronized: true, evidence: 'test' }) };

async function setup(t: { teardown(fn: () => void | Promise<void>): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'ota-pull-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const served = join(dir, 'served');
  mkdirSync(served);
  const packed = await packModel(join(modelFixturesDir, 'tiny-llm'), {
    id: 'tiny-llm',
    version: '1.0.0',
    outDir: served,
  });
  const srv = await servePackages(served);
  t.teardown(() => srv.close());
  const db = openStore(join(dir, 'agent.db'));
  t.teardown(() => void db.close());
  const { store } = ModelStore.open({ dataDir: dir, db });
  const installer = new ModelStoreInstaller(store);
  const deps = (keys: { publicKey: string }[]) => ({
    trust: new TrustStore(db, trustPolicyFromConfig(keys, 1), time),
    downloader: new Downloader({ headroomBytes: 0 }),
    installer: {
      async install(tarball: string, expect: { id: string; version: string } | undefined) {
        if (expect) {
          await installer.install(tarball, expect);
          return expect;
        }
        const p = await store.import(tarball);
        return { id: p.id, version: p.version };
      },
    },
    stagingDir: join(dir, 'staging'),
    facts: { deviceId: 'bench', tags: [], arch: process.arch },
    readTargets: async () => ({}),
  });
  return { dir, srv, store, packed, deps, url: `${srv.baseUrl}${packed.artifact.name}` };
}

test('without a trusted key, pull refuses unless a sha256 is given; with the right sha256 it installs', async (t) => {
  const { store, packed, deps, url } = await setup(t);
  await t.throwsAsync(pullPackage({ url }, deps([])), {
    message:
      'No trusted key is configured (ota.rootFile or ota.trustedKeys): add the fleet root or signing key, or pass --sha256 of the package to install it once',
  });
  const wrong = 'f'.repeat(64);
  await t.throwsAsync(pullPackage({ url, sha256: wrong }, deps([])), {
    message: `Downloaded ${url} has sha256 ${packed.artifact.sha256}, expected ${wrong}`,
  });
  t.deepEqual(store.list(), []);
  const r = await pullPackage({ url, sha256: packed.artifact.sha256 }, deps([]));
  t.deepEqual(r, {
    ref: { id: 'tiny-llm', version: '1.0.0' },
    trustedBy: 'sha256',
    bytes: packed.artifact.length,
  });
  t.truthy(store.get({ id: 'tiny-llm', version: '1.0.0' }));
});

test('https with a private CA: trusted through ota.download.ca, refused without it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ota-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  selfSignedCert(dir);
  const data = randomBytes(100_000);
  writeFileSync(join(dir, 'p.tar'), data);
  const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
  const server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) =>
    handlePackageRequest(dir, req, res),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/p.tar`;
  const target = { url, length: data.length, sha256: createHash('sha256').update(data).digest('hex') };
  await new Downloader({ ca: cert, headroomBytes: 0 }).fetch({ ...target, dest: join(dir, 'a.tar') });
  t.deepEqual(readFileSync(join(dir, 'a.tar')), data);
  await t.throwsAsync(new Downloader({ headroomBytes: 0 }).fetch({ ...target, dest: join(dir, 'b.tar') }), {
    message: `Download of ${url} failed: self-signed certificate`,
  });
});
