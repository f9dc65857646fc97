// The power-cut run's verdict (scripts/system-image/powercut-report.ts): PASS when something was checked and every
// check that ran met its target, with the rule in the line; a run of the full-disk case alone (--cuts 0) included.
import test from 'ava';
import type { TelemetryCheck } from '../../scripts/system-image/powercut-checks.js';
import { type CutResult, summarize, VERDICT_RULE } from '../../scripts/system-image/powercut-report.js';
import { passingFullDisk } from '../helpers/powercut-fixtures.js';

const fullDisk = passingFullDisk;
const telemetry: TelemetryCheck = {
  offsetMs: 0,
  offsetErrMs: 500,
  lostMessages: 3,
  blindMs: 1000,
  messageBound: 10,
  withinBound: true,
  lostMs: 9000,
  window: 6000,
  withinWindow: false,
  duplicates: 1,
  duplicateBound: 232,
  duplicatesWithinBound: true,
  duplicatesBeyondWindow: 1,
};
const cut: CutResult = {
  cut: 1,
  loadS: 12,
  bootS: 180,
  serves: true,
  settings: { acked: 4, lost: [] },
  settingsSent: 5,
  settingsRefused: [],
  telemetry,
  integrity: [{ db: '/var/lib/mnn-edge/agent.db', result: 'ok' }],
};
const quiet = [{ received: 50, reused: [], gaps: [] }];

test('the full-disk case alone passes when its checks pass, and says so with the rule', (t) => {
  const r = summarize({ cuts: [], sittings: quiet, fullDisk, asked: 0 });
  t.true(r.ok);
  t.is(r.verdict, `PASS: the full-disk case (rule: ${VERDICT_RULE})`);
});

test('nothing checked is a FAIL; a missed check is named', (t) => {
  const none = summarize({ cuts: [], sittings: quiet, asked: 3 });
  t.false(none.ok);
  t.regex(none.verdict, /^FAIL: nothing checked \(rule: /);
  const torn = summarize({ cuts: [], sittings: quiet, fullDisk: { ...fullDisk, integrityOk: false } });
  t.false(torn.ok);
  t.regex(torn.verdict, /^FAIL: the full-disk case; missed: full disk \(rule/);
});

test('a late agent beyond the on-time window but within flushMaxMessages passes; beyond the count fails', (t) => {
  const r = summarize({ cuts: [cut], sittings: quiet, fullDisk, asked: 1 });
  t.true(r.ok, r.verdict);
  t.regex(r.verdict, /^PASS: 1 cut checked and the full-disk case/);
  t.regex(r.lines.find((l) => l.startsWith('telemetry'))!, /worst 3 messages against flushMaxMessages 10/);
  const lossy = { ...cut, telemetry: { ...telemetry, lostMessages: 11, withinBound: false } };
  const bad = summarize({ cuts: [lossy, { ...cut, cut: 2 }], sittings: quiet, asked: 2 });
  t.false(bad.ok);
  t.regex(bad.verdict, /^FAIL: 2 cuts checked; missed: telemetry lost beyond flushMaxMessages/);
});

test('a cut the guest did not come back from fails the run; sittings add up', (t) => {
  const failed: CutResult = { ...cut, cut: 2, error: 'QEMU exited' };
  const r = summarize({
    cuts: [cut, failed],
    sittings: [...quiet, { received: 7, reused: [4], gaps: [] }],
  });
  t.false(r.ok);
  t.is(r.telemetryReceived, 57);
  t.deepEqual(r.reusedSeq, [4]);
  t.regex(r.verdict, /missed: cuts not checked, seq reused/);
  t.regex(r.lines[0]!, /over 2 sittings/);
});
