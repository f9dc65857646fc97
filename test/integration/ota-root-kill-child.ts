// The process ota-root-kill.test.ts kills: it walks a device through a long chain of root rotations (each one
// changing the targets key), accepting a targets document under each root before rotating to the next, until
// the chain ends or SIGKILL arrives. argv: dataDir chainFile targetsFile
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../../agent/store/database.js';
import { RootStore } from '../../ota/trust/root-store.js';
import { TrustStore } from '../../ota/trust/trust.js';

const [dataDir, chainFile, targetsFile] = process.argv.slice(2) as [string, string, string];
const chain = JSON.parse(readFileSync(chainFile, 'utf8')) as unknown[];
const targets = JSON.parse(readFileSync(targetsFile, 'utf8')) as unknown[];
const time = { trustedNow: () => Date.now(), clockStatus: () => ({ synchronized: true, evidence: 'test' }) };
const db = openStore(join(dataDir, 'agent.db'));
const roots = new RootStore(db, {
  legacyKeys: [],
  legacyThreshold: 1,
  shippedRoot: join(dataDir, 'root-v1.json'),
  time,
});
const trust = new TrustStore(db, roots, time);
process.stdout.write('ready\n');
for (;;) {
  const version = roots.current().version;
  if (version >= chain.length) break;
  // chain[i] is root version i + 1, targets[i] is signed by that root's targets key.
  trust.accept(targets[version - 1]);
  roots.rotate([chain[version]]);
  process.stdout.write(`v${version + 1}\n`);
}
db.close();
