import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import { hashFile, ModelStore, packageFiles } from '../../models/index.js';
import { modelFixturesDir, repoRoot } from '../helpers/paths.js';

const CHILD = join(repoRoot, 'test', 'integration', 'models-crash-child.ts');
const SOURCE = join(modelFixturesDir, 'tiny-llm');

/** Runs an import in a child, waits until it reports reaching the checkpoint, then kills it with SIGKILL. */
function importAndKill(dataDir: string, step: string, occurrence: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import=tsx', CHILD, dataDir, SOURCE, step, String(occurrence)],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('AT ')) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(out.trim());
      else reject(new Error(`child exited with ${code} before ${step} #${occurrence}: ${out}${err}`));
    });
  });
}

const points: [string, number, boolean][] = [
  ['staged-file', 1, false],
  ['staged-file', 4, false],
  ['staged', 1, false],
  ['published', 1, false],
  ['committed', 1, true],
];

for (const [step, occurrence, installed] of points) {
  test(`kill -9 at ${step} #${occurrence}: after restart the store is consistent`, async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'models-crash-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const at = await importAndKill(dataDir, step, occurrence);
    t.regex(at, new RegExp(`^AT ${step} `));
    const db = openStore(join(dataDir, 'agent.db'));
    t.teardown(() => db.close());
    const { store } = ModelStore.open({ dataDir, db });
    const models = join(dataDir, 'models');
    t.deepEqual(readdirSync(join(models, '.staging')), [], 'no staging leftovers');
    t.deepEqual(db.prepare('SELECT * FROM model_journal').all(), [], 'journal settled');
    if (!installed) {
      t.deepEqual(store.list(), []);
      t.false(existsSync(join(models, 'tiny-llm')), 'no half-installed package directory');
      // The interrupted import can simply be run again.
      await store.import(SOURCE, { version: '1.0.0' });
    }
    const [pkg, ...rest] = store.list();
    t.is(rest.length, 0);
    t.is(`${pkg!.id}@${pkg!.version}`, 'tiny-llm@1.0.0');
    for (const [path, want] of packageFiles(pkg!.manifest))
      t.deepEqual(await hashFile(join(pkg!.dir, path)), want, path);
    t.deepEqual(readdirSync(join(models, 'tiny-llm')), ['1.0.0']);
  });
}
