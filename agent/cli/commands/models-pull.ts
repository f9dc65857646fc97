// First boot: `mnn-edge models pull <url>` installs a package without a fleet, through the same downloader
// and verification as OTA jobs (ota/jobs/pull-package.ts does the work; this is its command line).

import { arch as hostArch } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../../lib/clock.js';
import { Downloader } from '../../../lib/download/downloader.js';
import { modelsConfigOf, storeLimitsOf } from '../../../models/config.js';
import { formatRef, ModelStore } from '../../../models/index.js';
import { resolveOtaConfig } from '../../../ota/config.js';
import { pullPackage, readTargetsFrom } from '../../../ota/jobs/pull-package.js';
import { ModelStoreInstaller } from '../../../ota/jobs/store-adapter.js';
import { rootStoreFor, stagingDirOf } from '../../../ota/module.js';
import { TrustStore } from '../../../ota/trust/trust.js';
import { KvStore, openStore } from '../../store/database.js';
import { timesyncdProbe } from '../../time/sync-probe.js';
import { createTrustedTime } from '../../time/trusted-time.js';
import { parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo } from '../common/command.js';
import { configFromFlags } from './config.js';

export const MODELS_PULL_USAGE =
  'mnn-edge models pull <url> [--targets URL|FILE] [--sha256 HEX] [--config FILE] [--data-dir DIR]';

/** The `models pull` subcommand: argv is what follows `pull`. */
export async function runModelsPull(argv: string[], io: CliIo): Promise<number> {
  const args = parseArgs(argv, { values: ['targets', 'sha256', 'config', 'data-dir', 'root'] });
  const [url, ...rest] = args.positionals;
  if (url === undefined) throw new UsageError('missing package URL');
  if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
  if (!/^https?:\/\//.test(url)) throw new UsageError(`expected an http(s) URL, got '${url}'`);
  const { config } = configFromFlags(args, io.env);
  const ota = resolveOtaConfig(config['ota']);
  const db = openStore(join(config.dataDir, 'agent.db'));
  let closeStore = () => {};
  try {
    const kv = new KvStore(db);
    const time = createTrustedTime({ kv, clock: systemClock, probe: timesyncdProbe(config.root) });
    // The store's configured limits apply to pulled packages exactly as to imported ones.
    const { store } = ModelStore.open({
      dataDir: config.dataDir,
      db,
      limits: storeLimitsOf(modelsConfigOf(config['models'])),
    });
    closeStore = () => store.close();
    const installer = new ModelStoreInstaller(store, { headroomBytes: ota.download.headroomBytes });
    const downloader = new Downloader(ota.download);
    let last = 0;
    downloader.on('progress', (p) => {
      if (p.done - last < p.total / 20 && p.done !== p.total) return;
      last = p.done;
      io.stderr.write(`downloading ${Math.floor((p.done / p.total) * 100)}% (${p.done}/${p.total} bytes)\n`);
    });
    const result = await pullPackage(
      {
        url,
        ...(stringFlag(args, 'targets') !== undefined ? { targets: stringFlag(args, 'targets')! } : {}),
        ...(stringFlag(args, 'sha256') !== undefined ? { sha256: stringFlag(args, 'sha256')! } : {}),
      },
      {
        trust: new TrustStore(db, rootStoreFor(db, ota, time), time),
        downloader,
        installer: {
          async install(tarball, expect, signal) {
            if (expect) {
              await installer.install(tarball, expect, signal);
              return expect;
            }
            const pkg = await store.import(tarball, {
              manifestFirst: true,
              headroomBytes: ota.download.headroomBytes,
              ...(signal ? { signal } : {}),
            });
            return { id: pkg.id, version: pkg.version };
          },
        },
        stagingDir: stagingDirOf(ota, config.dataDir),
        facts: { deviceId: config.deviceId ?? 'local', tags: config.tags, arch: hostArch() },
        readTargets: (where) => readTargetsFrom(where, ota.download),
      },
    );
    io.stdout.write(
      `installed ${formatRef(result.ref)} (${result.bytes} bytes, trusted by ${result.trustedBy})\n`,
    );
    return 0;
  } finally {
    closeStore();
    db.close();
  }
}
