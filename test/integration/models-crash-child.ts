// Child process for models-crash.test.ts: imports a package and, at the requested checkpoint, announces it
// and stalls so the parent can kill -9 it right there.
//   node --import=tsx models-crash-child.ts <dataDir> <source> <step> <occurrence>
import { join } from 'node:path';
import { openStore } from '../../agent/store/database.js';
import { ModelStore } from '../../models/index.js';

const [dataDir, source, stopStep, occurrence] = process.argv.slice(2);
if (!dataDir || !source || !stopStep || !occurrence) {
  console.error('usage: models-crash-child.ts <dataDir> <source> <step> <occurrence>');
  process.exit(2);
}
const db = openStore(join(dataDir, 'agent.db'));
const { store } = ModelStore.open({ dataDir, db });
let seen = 0;
await store.import(source, {
  version: '1.0.0',
  checkpoint: async (step, detail) => {
    if (step !== stopStep || ++seen !== Number(occurrence)) return;
    process.stdout.write(`AT ${step} ${detail}\n`);
    await new Promise((resolve) => setTimeout(resolve, 60_000));
  },
});
process.stdout.write('DONE\n');
db.close();
