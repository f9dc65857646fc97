import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import type { JobState, OtaJob } from '../../ota/jobs/job.js';
import {
  decide,
  jobIdFor,
  parsePhases,
  phaseEnds,
  RolloutController,
  type RolloutSpec,
} from '../../ota/tools/rollout.js';
import { parseAbortCriteria, parseRamp } from '../../ota/tools/rollout-policy.js';

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
    attempts: 1,
    sentAt: 0,
    retryAt: undefined,
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

function clocked(over: Partial<RolloutSpec>) {
  const db = openStore(':memory:');
  const sent: OtaJob[] = [];
  let now = 1_000_000;
  const ctl = new RolloutController(
    db,
    async (_d, job) => void sent.push(job),
    () => now,
  );
  ctl.create(spec(over));
  const report = (deviceId: string, state: JobState, reason?: string, attempt = 1) =>
    ctl.observe({
      jobId: jobIdFor('r1', deviceId, attempt),
      deviceId,
      state,
      package: { id: 'm', version: '2.0.0' },
      rolloutId: 'r1',
      ts: 0,
      ...(reason ? { reason: reason as never } : {}),
    });
  return {
    db,
    sent,
    ctl,
    report,
    tick: (ms: number) => {
      now += ms;
    },
  };
}

test('a job with no final state within the job timeout is timed out, counted, and stops the rollout', async (t) => {
  const { ctl, report, tick } = clocked({
    phases: parsePhases('100%'),
    errorThreshold: 1,
    jobTimeoutMs: 60_000,
    abort: parseAbortCriteria('timed-out:20%', 5),
  });
  await ctl.advance('r1');
  for (const d of ['d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6']) report(d, 'succeeded');
  report('d7', 'downloading'); // d8, d9: offline, never answered
  tick(30_000);
  let v = await ctl.advance('r1');
  t.is(v.state, 'running', 'pending until the timeout, not failed');
  t.is(v.devices.find((d) => d.deviceId === 'd8')?.state, 'sent');
  tick(31_000);
  v = await ctl.advance('r1');
  t.is(v.state, 'stopped');
  t.deepEqual(
    v.devices.filter((d) => d.state === 'timed-out').map((d) => `${d.deviceId}: ${d.reason}`),
    [
      'd7: no final state within 60 s (last: downloading)',
      'd8: no final state within 60 s (last: sent)',
      'd9: no final state within 60 s (last: sent)',
    ],
  );
  t.is(
    v.message,
    'stopped in phase 1: 3 of 10 started devices timed out (30.0 % > 20.0 %, judged from 5 started)',
  );
  t.deepEqual(v.decision, { type: 'timed-out', count: 3, started: 10, threshold: 0.2, minStarted: 5 });
});

test('transient failures are retried with backoff under a new job id; permanent ones never', async (t) => {
  const { ctl, sent, report, tick } = clocked({
    devices: ['d0', 'd1'],
    phases: parsePhases('100%'),
    errorThreshold: 1,
    successThreshold: 0,
    retries: 2,
    retryBackoffMs: 10_000,
  });
  await ctl.advance('r1');
  report('d0', 'failed', 'download');
  report('d1', 'rolled-back', 'health-gate');
  let v = await ctl.advance('r1');
  t.is(v.devices[0]?.state, 'retrying');
  t.is(v.devices[1]?.state, 'rolled-back');
  t.is(sent.length, 2, 'nothing before the backoff');
  tick(10_001);
  v = await ctl.advance('r1');
  t.deepEqual(
    sent.map((j) => j.jobId),
    ['r1.d0', 'r1.d1', 'r1.d0.r2'],
  );
  report('d0', 'failed', 'download', 2);
  tick(20_001);
  await ctl.advance('r1');
  report('d0', 'failed', 'download', 3);
  v = await ctl.advance('r1');
  t.is(v.devices[0]?.state, 'failed', 'three attempts, then it counts');
  t.is(v.devices[0]?.attempts, 3);
  t.is(v.state, 'completed');
  t.is(v.message, '0 of 2 devices updated');
});

test('--max-per-minute and --ramp pace the sends', async (t) => {
  const flat = clocked({ phases: parsePhases('100%'), rate: { perMinute: 3 } });
  await flat.ctl.advance('r1');
  t.is(flat.sent.length, 3);
  flat.tick(30_000);
  await flat.ctl.advance('r1');
  t.is(flat.sent.length, 3);
  flat.tick(30_001);
  await flat.ctl.advance('r1');
  t.is(flat.sent.length, 6);
  const ramp = clocked({ phases: parsePhases('100%'), rate: parseRamp('2,2') });
  await ramp.ctl.advance('r1');
  t.is(ramp.sent.length, 2);
  ramp.tick(60_001);
  await ramp.ctl.advance('r1');
  t.is(ramp.sent.length, 6, 'second minute: 4 more');
  t.throws(() => parseRamp('0,2'), { message: '--ramp expects START,FACTOR (e.g. 10,2), got "0,2"' });
});

test('10 % failing the health gate in a phase stops inside it: no job for the next phase', async (t) => {
  const devices = Array.from({ length: 40 }, (_, i) => `d${i}`);
  const { ctl, sent, report } = clocked({
    devices,
    phases: parsePhases('50%,100%'),
    errorThreshold: 1,
    successThreshold: 0.5,
    abort: parseAbortCriteria('rolled-back:5%', 10),
  });
  await ctl.advance('r1');
  t.is(sent.length, 20);
  // Devices report one by one; the two failures come late, after 15 successes.
  for (let i = 0; i < 15; i++) report(`d${i}`, 'succeeded');
  report('d15', 'rolled-back', 'health-gate');
  report('d16', 'rolled-back', 'health-gate');
  const v = await ctl.advance('r1');
  t.is(v.state, 'stopped');
  t.is(v.phase, 0);
  t.is(sent.length, 20, 'no job went to phase 2');
  t.regex(v.message ?? '', /^stopped in phase 1: 2 of 20 started devices failed the health gate/);
});

test('a malformed status fails its device with the reason; duplicates are sent once and listed', async (t) => {
  const { ctl, sent, report } = clocked({
    devices: ['d0', 'd1', 'd1', 'd2'],
    phases: parsePhases('100%'),
    errorThreshold: 1,
    successThreshold: 0,
  });
  await ctl.advance('r1');
  t.deepEqual(
    sent.map((j) => j.jobId),
    ['r1.d0', 'r1.d1', 'r1.d2'],
  );
  t.true(ctl.observeMalformed('r1', 'd1', 'malformed status: /state must be one of queued, …'));
  report('d0', 'succeeded');
  report('d2', 'succeeded');
  const v = await ctl.advance('r1');
  t.is(v.state, 'completed');
  t.is(v.devices[1]?.reason, 'malformed status: /state must be one of queued, …');
  t.deepEqual(v.spec.ignored, { duplicate: ['d1'], unknown: [] });
});

test('a rollout written in a newer format is refused with its version', (t) => {
  const { db, ctl } = clocked({});
  const row = db.prepare('SELECT spec FROM ota_rollouts').get() as { spec: string };
  db.prepare('UPDATE ota_rollouts SET spec = ?').run(JSON.stringify({ ...JSON.parse(row.spec), format: 9 }));
  t.throws(() => ctl.get('r1'), {
    message: 'Rollout r1 was written in rollout format 9; this mnn-edge reads up to 2: use a newer mnn-edge',
  });
});

test('--follow: devices that come later join until --until; the rollout stays open until then', async (t) => {
  const { ctl, sent, report, tick } = clocked({
    devices: ['d0'],
    phases: parsePhases('100%'),
    follow: { tag: 'lab', untilMs: 1_000_000 + 120_000 },
  });
  await ctl.advance('r1');
  report('d0', 'succeeded');
  t.is((await ctl.advance('r1')).state, 'running');
  t.true(ctl.join('r1', 'late-1'));
  t.false(ctl.join('r1', 'late-1'), 'once');
  await ctl.advance('r1');
  t.deepEqual(
    sent.map((j) => j.jobId),
    ['r1.d0', 'r1.late-1'],
  );
  report('late-1', 'succeeded');
  tick(120_001);
  t.false(ctl.join('r1', 'late-2'), 'closed after --until');
  const v = await ctl.advance('r1');
  t.is(v.state, 'completed');
  t.is(v.message, 'all 2 devices updated');
});
