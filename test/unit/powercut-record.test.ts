// The power-cut bench's resumable record (scripts/system-image/powercut-record.ts): cuts appended as they are
// checked, a later sitting continuing it, and records of other packages or images refused in one line.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  keyDifference,
  PowercutRecord,
  packagesKey,
  RecordRefused,
  recordFileName,
} from '../../scripts/system-image/powercut-record.js';
import type { CutResult } from '../../scripts/system-image/powercut-report.js';
import { passingFullDisk } from '../helpers/powercut-fixtures.js';

const key = {
  packages: { 'mnn-edge_0.1.0_arm64.deb': 'a'.repeat(64), 'mnn-edge-engine_0.1.0_arm64.deb': 'b'.repeat(64) },
  image: 'bookworm-arm64-e0033d6cc936225d',
};
const cut = (n: number): CutResult => ({
  cut: n,
  loadS: 10,
  bootS: 180,
  serves: true,
  settingsSent: 5,
  settingsRefused: [],
  integrity: [{ db: '/var/lib/mnn-edge/agent.db', result: 'ok' }],
});
const telemetry = (received: number) => ({ received, reused: [], gaps: [] });

function withDir(run: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-pc-record-'));
  try {
    run(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('cuts are appended as they finish; --resume continues the record in a new sitting', (t) =>
  withDir((dir) => {
    const path = join(dir, 'sub', 'record.jsonl');
    const first = PowercutRecord.open(path, key, false);
    t.is(first.sitting, 1);
    first.addCut(cut(1), telemetry(40));
    first.addCut(cut(2), telemetry(90));
    const second = PowercutRecord.open(path, key, true);
    t.is(second.sitting, 2);
    t.deepEqual(
      second.cuts.map((c) => c.cut),
      [1, 2],
    );
    t.is(second.settingsSent(), 10, "the next sitting's settings tags go on after these");
    t.deepEqual(second.sittings(), [telemetry(90)], "a sitting's last telemetry line counts");
    second.addCut(cut(3), telemetry(30));
    second.addFullDisk(passingFullDisk);
    const third = PowercutRecord.open(path, key, true);
    t.is(third.cuts.length, 3);
    t.deepEqual(third.sittings(), [telemetry(90), telemetry(30)]);
    t.is(third.fullDisk()?.status, 507);
  }));

test('a record of other packages or another image is refused with one line that says which', (t) =>
  withDir((dir) => {
    const path = join(dir, 'record.jsonl');
    PowercutRecord.open(path, key, false).addCut(cut(1), telemetry(1));
    const other = { ...key, packages: { ...key.packages, 'mnn-edge_0.1.0_arm64.deb': 'c'.repeat(64) } };
    const err = t.throws(() => PowercutRecord.open(path, other, true), { instanceOf: RecordRefused });
    t.regex(err!.message, /other packages \(mnn-edge_0\.1\.0_arm64\.deb: sha256 aaaaaaaaaaaa… in the record/);
    t.false(err!.message.includes('\n'));
    t.throws(() => PowercutRecord.open(path, { ...key, image: 'bookworm-arm64-0000' }, true), {
      instanceOf: RecordRefused,
      message: /image bookworm-arm64-e0033d6cc936225d, this run's is bookworm-arm64-0000/,
    });
    t.throws(() => PowercutRecord.open(path, key, false), {
      instanceOf: RecordRefused,
      message: /already holds 1 cuts of these packages: --resume continues it/,
    });
    writeFileSync(join(dir, 'not-a-record'), '{"kind":"cut"}\n');
    t.throws(() => PowercutRecord.open(join(dir, 'not-a-record'), key, true), { instanceOf: RecordRefused });
  }));

test('a line torn by a crash while it was written is left out, and the next line stands on its own', (t) =>
  withDir((dir) => {
    const path = join(dir, 'record.jsonl');
    PowercutRecord.open(path, key, false).addCut(cut(1), telemetry(1));
    appendFileSync(path, '{"kind":"cut","sitting":1,"result":{"cut":2,"lo');
    const resumed = PowercutRecord.open(path, key, true);
    t.is(resumed.cuts.length, 1);
    resumed.addCut(cut(2), telemetry(5));
    t.deepEqual(
      PowercutRecord.open(path, key, true).cuts.map((c) => c.cut),
      [1, 2],
    );
    t.true(readFileSync(path, 'utf8').endsWith('\n'));
  }));

test('the key: each package by sha256, and a record folder names its file by the key', (t) =>
  withDir((dir) => {
    writeFileSync(join(dir, 'a_arm64.deb'), 'one');
    writeFileSync(join(dir, 'notes.txt'), 'ignored');
    t.deepEqual(packagesKey(dir), {
      'a_arm64.deb': '7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed',
    });
    t.is(keyDifference(key, { ...key }), undefined);
    t.regex(
      keyDifference(key, { ...key, packages: { 'mnn-edge_0.1.0_arm64.deb': 'a'.repeat(64) } }) ?? '',
      /mnn-edge-engine_0\.1\.0_arm64\.deb: sha256 bbbbbbbbbbbb… in the record, absent here/,
    );
    t.regex(recordFileName(key), /^powercut-bookworm-arm64-e0033d6cc936225d-[0-9a-f]{12}\.jsonl$/);
    t.not(recordFileName(key), recordFileName({ ...key, packages: {} }));
  }));
