// bench/settings: what a run-time settings change costs on disk (OverlayStore.commit: the overlay written
// atomically, its change-log line appended, both fsynced). The baseline, measured in the same run on the same
// disk, is the durable minimum any such change pays: the same overlay through writeFileDurable (write, fsync,
// rename, fsync of the directory) and the same line appended and fsynced, with nothing else. Since issue 43 the
// commit also keeps the previous overlay linked aside until the log line is written (a refused change on a full
// disk puts it back): a link and an unlink, no extra fsync. Target: commit ≤ 1.25× the baseline.
// BENCH_SETTINGS_DIR picks the disk (default: the OS temp dir); BENCH_SETTINGS_ROUNDS the count (default 200).
import { appendFileSync, closeSync, fsyncSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OverlayStore } from '../agent/config/overlay-store.js';
import { writeFileDurable } from '../lib/durable-fs.js';
import { check, describe, fmt, summarize } from './lib/stats.js';

const ROUNDS = Math.max(20, Number(process.env['BENCH_SETTINGS_ROUNDS'] ?? 200));
const dir = mkdtempSync(join(process.env['BENCH_SETTINGS_DIR'] ?? tmpdir(), 'mnn-edge-bench-settings-'));

try {
  const store = new OverlayStore(join(dir, 'store'));
  store.commit({ tags: ['warm'] }, 'bench', [], new Date());
  writeFileDurable(join(dir, 'warm'), 'x');
  const commit: number[] = [];
  const baseline: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const overlay = { tags: [`t-${i}`], voice: { systemPrompt: `Round ${i}.` } };
    const changes = [{ key: 'tags', old: [`t-${i - 1}`], new: [`t-${i}`] }];
    let t0 = performance.now();
    store.commit(overlay, 'bench', changes, new Date());
    commit.push(performance.now() - t0);

    t0 = performance.now();
    const doc = { format: 1, revision: i + 1, updatedAt: new Date().toISOString(), overlay };
    writeFileDurable(join(dir, 'config-overlay.json'), `${JSON.stringify(doc, null, 2)}\n`, 0o600);
    const fd = openSync(join(dir, 'config-history.jsonl'), 'a', 0o600);
    appendFileSync(
      fd,
      `${JSON.stringify({ revision: i + 1, at: doc.updatedAt, who: 'bench', changes, overlay })}\n`,
    );
    fsyncSync(fd);
    closeSync(fd);
    baseline.push(performance.now() - t0);
  }
  const c = summarize(commit);
  const b = summarize(baseline);
  console.log(`disk: ${dir}, ${ROUNDS} changes each`);
  console.log(`  baseline (write+fsync+rename+fsync dir, append+fsync): ${describe(b, 'ms')}`);
  console.log(`  OverlayStore.commit:                                  ${describe(c, 'ms')}`);
  const ratio = c.median / b.median;
  console.log(
    `commit / baseline (median): ${fmt(ratio)}x ${check('commit / durable baseline', ratio, 'x', '≤ 1.25', ratio <= 1.25)}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
