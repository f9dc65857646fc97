// The install-driving process of ota-kill.test.ts: a device's OTA side over a real store, run until its job
// ends or the test kills it with SIGKILL. argv: dataDir jobFile publicKey bytesPerSecond llmDemo|''
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KvStore, openStore } from '../../agent/store/database.js';
import { createLogger } from '../../lib/log.js';
import { ModelStore } from '../../models/index.js';
import { otaDefaults } from '../../ota/config.js';
import { createOtaDevice, storePorts } from '../../ota/module.js';

const [dataDir, jobFile, publicKey, rate, llmDemo] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const db = openStore(join(dataDir, 'agent.db'));
const { store } = ModelStore.open({ dataDir, db });
const config = {
  ...otaDefaults,
  trustedKeys: [{ publicKey }],
  download: { ...otaDefaults.download, maxBytesPerSecond: Number(rate), headroomBytes: 0, backoffMs: 20 },
  health: { ...otaDefaults.health, maxTtftMs: 10_000, minDecodeRatio: 0.01, maxNewTokens: 4 },
  ...(llmDemo ? { llmDemo } : {}),
};
const device = createOtaDevice({
  db,
  dataDir,
  config,
  facts: { deviceId: 'dev-k', tags: [], arch: process.arch },
  time: { trustedNow: () => Date.now(), clockStatus: () => ({ synchronized: true, evidence: 'test' }) },
  logger: createLogger({ level: 'error', write: (l) => process.stderr.write(`${l}\n`) }),
  ports: storePorts(store, new KvStore(db), config),
});
device.runner.on('status', (s) => process.stdout.write(`${JSON.stringify(s)}\n`));
device.runner.start();
device.runner.submit(JSON.parse(readFileSync(jobFile, 'utf8')));
process.stdout.write('ready\n');
await device.runner.idle();
db.close();
