import { createHash } from 'node:crypto';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import test from 'ava';
import { main } from '../../agent/cli/main.js';
import { openStore } from '../../agent/store/database.js';
import { type ModelManifest, writeTar } from '../../models/index.js';
import { packModel } from '../../ota/tools/pack.js';
import { servePackages } from '../../ota/tools/serve.js';
import { generateSigningKey, parsePrivateKey, type SigningKey } from '../../ota/trust/keys.js';
import { type Artifact, signTargets } from '../../ota/trust/targets.js';
import { modelFixturesDir } from '../helpers/paths.js';

// The first-boot path attacked from outside, through `mnn-edge models pull` as a person runs it: decompression
// bombs, slow servers (artifact and metadata), deeply nested and prototype-keyed metadata, control characters,
// a missing --targets file. Every refusal is one line on stderr with exit status 1, and nothing is installed.

const tinyLlm = join(modelFixturesDir, 'tiny-llm');
const MIB = 1024 * 1024;

interface World {
  dir: string;
  served: string;
  baseUrl: string;
  signer: SigningKey;
  publicKey: string;
  manifest: ModelManifest;
  sign: (artifacts: Artifact[], version?: number) => unknown;
}

async function world(t: { teardown(fn: () => void | Promise<void>): void }): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'ota-pull-attacks-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const served = join(dir, 'served');
  mkdirSync(served);
  const { manifest } = await packModel(tinyLlm, { id: 'tiny-llm', version: '1.0.0', outDir: join(dir) });
  const srv = await servePackages(served);
  t.teardown(() => srv.close());
  const key = generateSigningKey();
  const signer = parsePrivateKey(key.privateKeyPem);
  return {
    dir,
    served,
    baseUrl: srv.baseUrl,
    signer,
    publicKey: key.publicKey,
    manifest,
    sign: (artifacts, version = 1) =>
      signTargets(
        {
          _type: 'mnn-edge/targets',
          specVersion: 1,
          version,
          expires: new Date(Date.now() + 86_400_000).toISOString(),
          packages: [{ id: 'tiny-llm', version: '1.0.0', artifacts }],
        },
        [signer],
      ),
  };
}

function config(w: World, name: string, extra: Record<string, unknown> = {}): string[] {
  const path = join(w.dir, `${name}.json`);
  const { download, ...rest } = extra as { download?: Record<string, unknown> };
  writeFileSync(
    path,
    JSON.stringify({
      ota: { trustedKeys: [{ publicKey: w.publicKey }], download: { headroomBytes: 0, ...download } },
      ...rest,
    }),
  );
  return ['--config', path, '--data-dir', join(w.dir, `data-${name}`)];
}

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
  // Progress lines ("downloading 40% …") are not part of the error.
  return { code, out, err: err.replace(/^downloading \d+% .*\n/gm, '') };
}

function artifactOf(path: string, name: string): Artifact {
  const bytes = readFileSync(path);
  return {
    variant: 'cpu-fp32',
    name,
    length: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
  };
}

async function* zeros(total: number): AsyncGenerator<Uint8Array> {
  const chunk = Buffer.alloc(MIB);
  for (let left = total; left > 0; left -= MIB) yield left >= MIB ? chunk : chunk.subarray(0, left);
}

/** Bytes under `dir`, recursively; files vanishing mid-walk count as 0. */
function du(dir: string): number {
  let n = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    try {
      const st = statSync(join(dir, name));
      n += st.isDirectory() ? du(join(dir, name)) : st.size;
    } catch {
      // removed while we looked
    }
  }
  return n;
}

/** Runs `models pull` while sampling how much the model store holds; returns the result and the peak. */
async function pullSampled(argv: string[], storeDir: string) {
  let peak = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, du(storeDir));
  }, 5);
  try {
    const r = await cli(argv);
    return { ...r, peak: Math.max(peak, du(storeDir)) };
  } finally {
    clearInterval(timer);
  }
}

function oneLine(
  t: { is(a: unknown, b: unknown, m?: string): void; false(a: boolean, m?: string): void },
  err: string,
) {
  t.is(err.split('\n').length, 2, `one line: ${JSON.stringify(err.slice(0, 300))}`);
  t.false(/\n\s+at /.test(err), 'no stack trace');
}

test('decompression bombs are refused before their bytes reach the disk, with the store limits from config', async (t) => {
  const w = await world(t);
  const manifestBytes = Buffer.from(JSON.stringify(w.manifest));
  const manifestTotal = w.manifest.variants[0]!.files.reduce((a, f) => a + f.length, 0);

  // A manifest that is honest about every file, and an archive header that declares llm.mnn as 64 MiB of zeros.
  const lying = join(w.served, 'lying.tar.gz');
  await pipeline(
    writeTar([
      { path: 'mnn-edge.json', data: manifestBytes },
      { path: 'llm.mnn', size: 64 * MIB, data: zeros(64 * MIB) },
    ]),
    createGzip(),
    createWriteStream(lying),
  );
  writeFileSync(
    join(w.served, 'targets.json'),
    JSON.stringify(w.sign([artifactOf(lying, 'lying.tar.gz')], 1)),
  );
  const a = await pullSampled(
    ['models', 'pull', `${w.baseUrl}lying.tar.gz`, ...config(w, 'lying')],
    join(w.dir, 'data-lying', 'models'),
  );
  t.is(a.code, 1);
  const llm = w.manifest.variants[0]!.files.find((f) => f.path === 'llm.mnn')!;
  t.is(a.err, `mnn-edge models: File llm.mnn is ${64 * MIB} bytes but the manifest says ${llm.length}\n`);
  t.true(
    a.peak <= manifestTotal + manifestBytes.length,
    `peak ${a.peak} bytes in the store, manifest total ${manifestTotal}`,
  );
  t.log(`lying bomb (${statSync(lying).size} bytes compressed): peak ${a.peak} bytes in the store`);

  // A manifest that admits the 64 MiB: over models.maxPackageBytes (32 MiB), which pull must honour like import.
  const honestManifest: ModelManifest = {
    ...w.manifest,
    variants: [
      {
        ...w.manifest.variants[0]!,
        files: [
          {
            path: 'zeros.bin',
            length: 64 * MIB,
            sha256: createHash('sha256')
              .update(Buffer.alloc(64 * MIB))
              .digest('hex'),
          },
        ],
      },
    ],
  };
  const honest = join(w.served, 'honest.tar.gz');
  await pipeline(
    writeTar([
      { path: 'mnn-edge.json', data: Buffer.from(JSON.stringify(honestManifest)) },
      { path: 'zeros.bin', size: 64 * MIB, data: zeros(64 * MIB) },
    ]),
    createGzip(),
    createWriteStream(honest),
  );
  writeFileSync(
    join(w.served, 'targets.json'),
    JSON.stringify(w.sign([artifactOf(honest, 'honest.tar.gz')], 2)),
  );
  const limited = config(w, 'limited', { models: { maxPackageBytes: 32 * MIB } });
  const b = await pullSampled(
    ['models', 'pull', `${w.baseUrl}honest.tar.gz`, ...limited],
    join(w.dir, 'data-limited', 'models'),
  );
  t.is(b.code, 1);
  t.is(
    b.err,
    `mnn-edge models: manifest lists ${64 * MIB} bytes of files, over the package limit of ${32 * MIB} bytes (models.maxPackageBytes)\n`,
  );
  t.true(b.peak < MIB, `peak ${b.peak}`);

  // Without a package limit: the expansion ratio against the signed, compressed length refuses it.
  const c = await pullSampled(
    ['models', 'pull', `${w.baseUrl}honest.tar.gz`, ...config(w, 'ratio')],
    join(w.dir, 'data-ratio', 'models'),
  );
  t.is(c.code, 1);
  t.regex(
    c.err,
    /^mnn-edge models: package would unpack to 67108864 bytes, more than 20 times its \d+ compressed bytes \(models\.maxCompressionRatio\)\n$/,
  );
  t.true(c.peak < MIB, `peak ${c.peak}`);
  t.false(existsSync(join(w.dir, 'data-ratio', 'models', 'tiny-llm')));
});

/** A server that sends `body` `bytesPerTick` at a time, every `tickMs`; counts what it sent. */
function trickle(body: Buffer, bytesPerTick: number, tickMs: number, cutAfter?: number) {
  const sent = { bytes: 0, connections: 0 };
  const server = createServer((req, res: ServerResponse) => {
    sent.connections++;
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    res.writeHead(m ? 206 : 200, {
      'content-length': String(body.length - start),
      ...(m ? { 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` } : {}),
    });
    let pos = start;
    let thisConnection = 0;
    const timer = setInterval(() => {
      if (pos >= body.length) return clearInterval(timer);
      if (cutAfter !== undefined && thisConnection >= cutAfter) {
        clearInterval(timer);
        res.destroy();
        return;
      }
      const piece = body.subarray(pos, pos + bytesPerTick);
      pos += piece.length;
      thisConnection += piece.length;
      sent.bytes += piece.length;
      res.write(piece);
    }, tickMs);
    res.on('close', () => clearInterval(timer));
  });
  return { server, sent };
}

async function listen(server: Server, t: { teardown(fn: () => void): void }): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

test('slow retrieval: a trickling artifact, a trickling targets document and a dribbling reconnector are refused', async (t) => {
  const w = await world(t);
  const packed = await packModel(tinyLlm, { id: 'tiny-llm', version: '1.0.0', outDir: w.served });
  const body = readFileSync(packed.tarball);
  const slow = {
    download: { minBytesPerSecond: 1024, rateWindowMs: 1000, backoffMs: 50, maxBackoffMs: 100 },
  };

  // The artifact at 10 bytes/s: refused once the 1 s window shows the average, long before it could finish.
  const art = trickle(body, 1, 100);
  const artUrl = await listen(art.server, t);
  writeFileSync(join(w.dir, 'targets.json'), JSON.stringify(w.sign([{ ...packed.artifact }])));
  const a = await cli([
    'models',
    'pull',
    `${artUrl}${packed.artifact.name}`,
    '--targets',
    join(w.dir, 'targets.json'),
    ...config(w, 'slow-artifact', slow),
  ]);
  t.is(a.code, 1);
  t.regex(
    a.err,
    /^mnn-edge models: Artifact at http:\S+ arrived at \d+\.\d bytes\/s over the last 1 s, below the minimum of 1024 bytes\/s \(ota\.download\.minBytesPerSecond\)\n$/,
  );
  t.true(
    art.sent.bytes < 200,
    `the server sent ${art.sent.bytes} of ${body.length} bytes before the refusal`,
  );

  // The targets document (metadata) at 10 bytes/s, served as the default targets.json beside the package.
  const targetsBody = Buffer.from(JSON.stringify(w.sign([{ ...packed.artifact }])));
  const meta = trickle(targetsBody, 1, 100);
  const metaUrl = await listen(meta.server, t);
  const b = await cli([
    'models',
    'pull',
    `${metaUrl}${packed.artifact.name}`,
    ...config(w, 'slow-meta', slow),
  ]);
  t.is(b.code, 1);
  t.regex(
    b.err,
    /^mnn-edge models: Document at http:\S+\/targets\.json arrived at \d+\.\d bytes\/s over the last 1 s/,
  );
  oneLine(t, b.err);
  t.true(meta.sent.bytes < 200, `sent ${meta.sent.bytes}`);

  // 64 bytes per connection, then a cut: every retry makes progress, no window ever completes, and only the
  // deadline derived from the signed length (2 × (1 s + 8 KiB at 4 KiB/s) = 6 s) ends it.
  const dribble = trickle(Buffer.alloc(8192, 7), 64, 5, 64);
  const dribbleUrl = await listen(dribble.server, t);
  const artifact = { variant: 'cpu-fp32', name: 'dribble.tar', length: 8192, sha256: 'a'.repeat(64) };
  writeFileSync(join(w.dir, 'targets-dribble.json'), JSON.stringify(w.sign([artifact])));
  const c = await cli([
    'models',
    'pull',
    `${dribbleUrl}dribble.tar`,
    '--targets',
    join(w.dir, 'targets-dribble.json'),
    ...config(w, 'dribble', {
      download: {
        minBytesPerSecond: 4096,
        rateWindowMs: 1000,
        backoffMs: 150,
        maxBackoffMs: 150,
        retries: 1000,
      },
    }),
  ]);
  t.is(c.code, 1);
  t.regex(
    c.err,
    /^mnn-edge models: Artifact at http:\S+dribble\.tar was not retrieved within 6 s, the deadline for 8192 bytes at the minimum rate\n$/,
  );
  t.true(
    dribble.sent.connections > 2 && dribble.sent.bytes < 8192,
    `${dribble.sent.connections} connections, ${dribble.sent.bytes} bytes`,
  );
});

test('hostile metadata: deep nesting (1 MiB, 10 MiB), prototype keys, control characters, a missing file', async (t) => {
  const w = await world(t);
  const packed = await packModel(tinyLlm, { id: 'tiny-llm', version: '1.0.0', outDir: w.served });
  const url = `${w.baseUrl}${packed.artifact.name}`;
  const nested = (bytes: number) => '['.repeat(bytes / 2) + ']'.repeat(bytes / 2);

  writeFileSync(join(w.served, 'targets.json'), nested(MIB));
  const one = await cli(['models', 'pull', url, ...config(w, 'nest1')]);
  t.is(one.code, 1);
  t.is(one.err, `mnn-edge models: Targets document ${w.baseUrl}targets.json nests deeper than 64 levels\n`);

  writeFileSync(join(w.served, 'targets.json'), nested(10 * MIB));
  const ten = await cli(['models', 'pull', url, ...config(w, 'nest10')]);
  t.is(ten.code, 1);
  t.is(
    ten.err,
    `mnn-edge models: Document at ${w.baseUrl}targets.json is ${10 * MIB} bytes, over the limit of ${MIB}\n`,
  );

  // The same nesting as a local --targets file.
  writeFileSync(join(w.dir, 'deep.json'), nested(MIB));
  const local = await cli([
    'models',
    'pull',
    url,
    '--targets',
    join(w.dir, 'deep.json'),
    ...config(w, 'nest-local'),
  ]);
  t.is(
    local.err,
    `mnn-edge models: Targets document ${join(w.dir, 'deep.json')} nests deeper than 64 levels\n`,
  );

  const signed = w.sign([{ ...packed.artifact }]) as { signed: unknown; signatures: unknown };
  for (const key of ['constructor', '__proto__', 'toString']) {
    writeFileSync(
      join(w.served, 'targets.json'),
      `{"signed":${JSON.stringify(signed.signed)},"signatures":${JSON.stringify(signed.signatures)},"${key}":{"attacker":"data"}}`,
    );
    const r = await cli(['models', 'pull', url, ...config(w, `proto-${key}`)]);
    t.is(r.code, 1, key);
    t.is(
      r.err,
      `mnn-edge models: Targets envelope is malformed: ${key}: is not a known key (expected one of: signed, signatures)\n`,
    );
    const db = openStore(join(w.dir, `data-proto-${key}`, 'agent.db'));
    t.is((db.prepare('SELECT COUNT(*) AS n FROM ota_trust').get() as { n: number }).n, 0, 'nothing trusted');
    db.close();
  }

  // A C1 control sequence (CSI) and a bidi override in a key name: shown escaped, never raw.
  writeFileSync(
    join(w.served, 'targets.json'),
    `{"signed":${JSON.stringify(signed.signed)},"signatures":[],"\\u009b2J\\u202eevil":1}`,
  );
  const ctl = await cli(['models', 'pull', url, ...config(w, 'ctl')]);
  t.is(ctl.code, 1);
  t.false(/[\u0080-\u009f\u202e]/.test(ctl.err), JSON.stringify(ctl.err));
  t.true(ctl.err.includes('\\x9b2J\\u202eevil'), ctl.err);

  const missing = await cli([
    'models',
    'pull',
    url,
    '--targets',
    join(w.dir, 'nope.json'),
    ...config(w, 'missing'),
  ]);
  t.is(missing.code, 1);
  t.is(
    missing.err,
    `mnn-edge models: Cannot read targets document ${join(w.dir, 'nope.json')}: ENOENT (no such file)\n`,
  );

  // And the same package with honest metadata installs: the refusals above were about the attacks.
  writeFileSync(join(w.served, 'targets.json'), JSON.stringify(signed));
  const ok = await cli(['models', 'pull', url, ...config(w, 'ok')]);
  t.is(ok.code, 0, ok.err);
  t.regex(ok.out, /^installed tiny-llm@1\.0\.0 \(\d+ bytes, trusted by signature\)\n$/);
});
