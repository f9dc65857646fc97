import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { removeStalePartials } from '../../models/hub/stale-partials.js';

const DAY = 86_400_000;

test('partial downloads untouched for a week are removed; recent ones and loose files stay', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'mnn-edge-partials-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const now = Date.now();
  const make = (name: string, ageDays: number, innerAgeDays = ageDays) => {
    const dir = join(root, name);
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'sub', 'llm.mnn.weight.part'), Buffer.alloc(1000));
    const old = new Date(now - ageDays * DAY);
    utimesSync(
      join(dir, 'sub', 'llm.mnn.weight.part'),
      new Date(now - innerAgeDays * DAY),
      new Date(now - innerAgeDays * DAY),
    );
    utimesSync(join(dir, 'sub'), old, old);
    utimesSync(dir, old, old);
  };
  make('hf-a-old-0123', 30);
  make('hf-b-recent-4567', 1);
  make('hf-c-old-dir-new-file-89ab', 30, 2); // a file written two days ago keeps the whole pull
  writeFileSync(join(root, 'note.txt'), 'not a pull');
  const removed = removeStalePartials(root, { nowMs: now });
  t.deepEqual(
    removed.map((r) => [r.dir, r.bytes, r.idleDays]),
    [[join(root, 'hf-a-old-0123'), 1000, 30]],
  );
  t.deepEqual(removeStalePartials(join(root, 'missing')), [], 'no downloads directory yet: nothing to do');
});
