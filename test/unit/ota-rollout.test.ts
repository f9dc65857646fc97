import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import type { JobState, OtaJob } from '../../ota/job.js';
import {
  decide,
  jobIdFor,
  parsePhases,
  phaseEnds,
  RolloutController,
  type RolloutSpec,
} from '../../ota/rollout.js';

const spec = (over: Partial<RolloutSpec> = {}): RolloutSpec => ({
  rolloutId: 'r1',
  package: { id: 'm', version: '2.0.0' },
  targets: { signed: {} as never, signatures: [] },
  baseUrl: 'http://127.0.0.1:1/',
  devices: ['d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6', 'd7', 'd8', 'd9'],
  phases: parsePhases('1,50%,100%'),
  successThreshold: 1,
  errorThreshold: 0.2,
  ...over,
});

test('phases are cumulative and the last covers everyone', (t) => {
  t.deepEqual(phaseEnds(parsePhases('1,50%,100%'), 10), [1, 5, 10]);
  t.deepEqual(phaseEnds(parsePhases('2,30%'), 10), [2, 3, 10]);
  t.deepEqual(phaseEnds(parsePhases('20'), 5), [5]);
  t.throws(() => parsePhases('1,0%'), {
    message: 'Invalid phase "0%": expected a device count (e.g. 1) or a percentage (e.g. 25%)',
  });
});

function harness() {
  const db = openStore(':memory:');
  const sent: OtaJob[] = [];
  const ctl = new RolloutController(db, async (_d, job) => void sent.push(job));
  const report = (deviceId: string, state: JobState) =>
    ctl.observe({
      jobId: jobIdFor('r1', deviceId),
      deviceId,
      state,
      package: { id: 'm', version: '2.0.0' },
      rolloutId: 'r1',
      ts: 0,
    });
  return { db, sent, ctl, report };
}

test('advances phase by phase on success, and is resumable from SQLite', async (t) => {
  const { db, sent, ctl, report } = harness();
  ctl.create(spec());
  let v = await ctl.advance('r1');
  t.deepEqual(
    sent.map((j) => j.jobId),
    ['r1.d0'],
  );
  report('d0', 'downloading');
  v = await ctl.advance('r1');
  t.is(v.phase, 0);
  report('d0', 'succeeded');
  v = await ctl.advance('r1');
  t.is(v.phase, 1);
  t.deepEqual(
    sent.slice(1).map((j) => j.jobId),
    ['r1.d1', 'r1.d2', 'r1.d3', 'r1.d4'],
  );
  // A controller restarted on the same database continues; resume re-sends unanswered jobs, same ids.
  const sent2: OtaJob[] = [];
  const again = new RolloutController(db, async (_d, job) => void sent2.push(job));
  await again.advance('r1', { resendUnanswered: true });
  t.deepEqual(
    sent2.map((j) => j.jobId),
    ['r1.d1', 'r1.d2', 'r1.d3', 'r1.d4'],
  );
  for (const d of ['d1', 'd2', 'd3', 'd4']) report(d, 'succeeded');
  v = await ctl.advance('r1');
  t.is(v.phase, 2);
  for (const d of ['d5', 'd6', 'd7', 'd8', 'd9']) report(d, 'succeeded');
  v = await ctl.advance('r1');
  t.is(v.state, 'completed');
  t.is(v.message, 'all 10 devices updated');
});

test('stops everything once failures pass the error threshold', async (t) => {
  const { sent, ctl, report } = harness();
  ctl.create(spec({ successThreshold: 0.5 }));
  await ctl.advance('r1');
  report('d0', 'succeeded');
  await ctl.advance('r1');
  report('d1', 'rolled-back');
  report('d2', 'failed');
  const v = await ctl.advance('r1');
  t.is(v.state, 'stopped');
  t.is(v.message, 'stopped in phase 2: 2 of 5 devices failed (error threshold 0.2)');
  const before = sent.length;
  await ctl.advance('r1');
  t.is(sent.length, before);
  // Reports for a stopped rollout's devices are still recorded, but nothing more is sent.
  t.true(report('d3', 'succeeded'));
});

test('decide: a phase below the success threshold stops the rollout', (t) => {
  const devices = ['a', 'b'].map((deviceId, ordinal) => ({
    deviceId,
    ordinal,
    phase: 0,
    jobId: deviceId,
    state: (ordinal === 0 ? 'succeeded' : 'rejected') as JobState,
    reason: undefined,
  }));
  const d = decide({
    spec: spec({ devices: ['a', 'b'], phases: [{ count: 2 }], errorThreshold: 1, successThreshold: 0.9 }),
    state: 'running',
    phase: 0,
    devices,
  });
  t.is(d.state, 'stopped');
  t.is(d.message, 'stopped after phase 1: 1 of 2 succeeded (success threshold 0.9)');
});
