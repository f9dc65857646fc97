import test from 'ava';
import {
  createLoopHeartbeat,
  createSystemdNotifier,
  type NotifyTransport,
  notifyAssignment,
  parseNotifyEnvironment,
  type Scheduler,
  type SystemdNotifierOptions,
} from '../../agent/systemd/index.js';
import { createMemoryLogger } from '../../lib/log.js';

function recordingTransport(fail?: (assignments: readonly string[]) => Error | undefined) {
  const sent: string[][] = [];
  const transport: NotifyTransport = {
    async send(assignments) {
      const err = fail?.(assignments);
      if (err) throw err;
      sent.push([...assignments]);
    },
  };
  return { sent, transport };
}

function manualScheduler() {
  const jobs: { ms: number; fn: () => void; cancelled: boolean }[] = [];
  const scheduler: Scheduler = {
    every(ms, fn) {
      const job = { ms, fn, cancelled: false };
      jobs.push(job);
      return () => {
        job.cancelled = true;
      };
    },
  };
  const tick = () => {
    for (const j of jobs) if (!j.cancelled) j.fn();
  };
  return { jobs, scheduler, tick };
}

const settle = () => new Promise((r) => setImmediate(r));
const systemdEnv = { NOTIFY_SOCKET: '/run/systemd/notify', WATCHDOG_USEC: '30000000', WATCHDOG_PID: '42' };

/** A notifier as systemd starts the agent (socket and watchdog for pid 42), on a recording transport and a manual
 *  scheduler; `extra` overrides any option. */
function notifierUnderTest(extra: Partial<SystemdNotifierOptions> = {}) {
  const logger = createMemoryLogger();
  const { sent, transport } = recordingTransport();
  const { jobs, scheduler, tick } = manualScheduler();
  const n = createSystemdNotifier({ env: systemdEnv, pid: 42, logger, transport, scheduler, ...extra });
  return { n, sent, jobs, tick, logger };
}

test('parseNotifyEnvironment: no socket means disabled, watchdog ignored', (t) => {
  t.deepEqual(parseNotifyEnvironment({ WATCHDOG_USEC: '1000000' }, 1), {
    socket: undefined,
    watchdogMs: undefined,
  });
});

test('parseNotifyEnvironment: reads socket and watchdog for our pid', (t) => {
  t.deepEqual(parseNotifyEnvironment(systemdEnv, 42), { socket: '/run/systemd/notify', watchdogMs: 30000 });
  t.deepEqual(parseNotifyEnvironment({ NOTIFY_SOCKET: '@abstract/notify' }, 1), {
    socket: '@abstract/notify',
    watchdogMs: undefined,
  });
});

test('parseNotifyEnvironment: watchdog meant for another pid is not ours', (t) => {
  t.is(parseNotifyEnvironment(systemdEnv, 43).watchdogMs, undefined);
});

test('parseNotifyEnvironment: bad values get specific errors', (t) => {
  t.throws(() => parseNotifyEnvironment({ NOTIFY_SOCKET: 'run/notify' }, 1), {
    message: 'NOTIFY_SOCKET must be an absolute path, @abstract or vsock:CID:PORT address, got "run/notify"',
  });
  t.throws(() => parseNotifyEnvironment({ NOTIFY_SOCKET: '/n', WATCHDOG_USEC: '30s' }, 1), {
    message: 'WATCHDOG_USEC must be a positive integer (microseconds), got "30s"',
  });
  t.throws(() => parseNotifyEnvironment({ NOTIFY_SOCKET: '/n', WATCHDOG_USEC: '0' }, 1), {
    message: 'WATCHDOG_USEC must be a positive integer (microseconds), got "0"',
  });
  t.throws(() => parseNotifyEnvironment({ NOTIFY_SOCKET: '/n', WATCHDOG_USEC: '5', WATCHDOG_PID: 'me' }, 1), {
    message: 'WATCHDOG_PID must be a process id, got "me"',
  });
});

test('notifyAssignment flattens newlines so a status cannot forge another key', (t) => {
  t.is(notifyAssignment('STATUS', 'ok\nREADY=1\r\n'), 'STATUS=ok READY=1');
  t.throws(() => notifyAssignment('status', 'x'), {
    message: 'sd_notify key must be upper-case A-Z, 0-9 or _, got "status"',
  });
});

test('disabled outside systemd: calls resolve false and send nothing', async (t) => {
  const { sent, transport } = recordingTransport();
  const n = createSystemdNotifier({ env: {}, logger: createMemoryLogger(), transport });
  t.false(n.enabled);
  t.false(await n.ready());
  t.false(await n.status('idle'));
  t.false(n.startWatchdog(() => true));
  t.false(await n.stopping());
  t.deepEqual(sent, []);
});

test('ready, status and stopping are sent in call order', async (t) => {
  const { sent, transport } = recordingTransport();
  const n = createSystemdNotifier({ env: { NOTIFY_SOCKET: '/x' }, logger: createMemoryLogger(), transport });
  t.true(n.enabled);
  const results = await Promise.all([n.status('starting'), n.ready(), n.status('serving\non :8080')]);
  t.deepEqual(results, [true, true, true]);
  t.true(await n.stopping());
  t.deepEqual(sent, [['STATUS=starting'], ['READY=1'], ['STATUS=serving on :8080'], ['STOPPING=1']]);
  await t.throwsAsync(n.status(42 as unknown as string), {
    message: 'Expected a string for status text but received number 42',
  });
});

test('a failed delivery resolves false, is logged, and does not block later ones', async (t) => {
  const logger = createMemoryLogger();
  const { sent, transport } = recordingTransport((a) =>
    a[0] === 'READY=1' ? new Error('socket gone') : undefined,
  );
  const n = createSystemdNotifier({ env: { NOTIFY_SOCKET: '/x' }, logger, transport });
  t.false(await n.ready());
  t.true(await n.status('still here'));
  t.deepEqual(sent, [['STATUS=still here']]);
  const warning = logger.lines.map((l) => JSON.parse(l)).find((r) => r.msg === 'sd_notify failed');
  t.like(warning, { level: 'warn', ns: 'mnn-edge:systemd', message: 'READY=1', error: 'socket gone' });
});

test('watchdog pings at half WatchdogSec while the loop is healthy, and stops when it stalls', async (t) => {
  const { n, sent, jobs, tick, logger } = notifierUnderTest();
  t.is(n.watchdogIntervalMs, 15000);
  let healthy = true;
  t.true(n.startWatchdog(() => healthy));
  t.is(jobs[0]?.ms, 15000);
  await settle();
  t.is(sent.length, 1, 'first ping is immediate');
  tick();
  await settle();
  t.is(sent.length, 2);
  healthy = false;
  tick();
  await settle();
  tick();
  await settle();
  t.is(sent.length, 2, 'no ping while the loop is stalled');
  healthy = true;
  tick();
  await settle();
  t.deepEqual(sent, [['WATCHDOG=1'], ['WATCHDOG=1'], ['WATCHDOG=1']]);
  const msgs = logger.lines.map((l) => JSON.parse(l).msg as string);
  t.is(msgs.filter((m) => m.startsWith('main loop stalled')).length, 1, 'stall logged once, not per tick');
  t.true(msgs.includes('main loop recovered; resuming WATCHDOG=1'));
  await n.stopping();
  t.true(jobs[0]?.cancelled);
  t.deepEqual(sent.at(-1), ['STOPPING=1']);
});

test('a throwing health check counts as a stall', async (t) => {
  const { n, sent } = notifierUnderTest();
  n.startWatchdog(() => {
    throw new Error('db closed');
  });
  await settle();
  t.deepEqual(sent, []);
});

test('watchdog pings do not pile up behind a slow sender', async (t) => {
  let release: () => void = () => {};
  let calls = 0;
  const transport: NotifyTransport = {
    send: () => {
      calls++;
      return new Promise<void>((r) => {
        release = r;
      });
    },
  };
  const { scheduler, tick } = manualScheduler();
  const n = createSystemdNotifier({
    env: systemdEnv,
    pid: 42,
    logger: createMemoryLogger(),
    transport,
    scheduler,
  });
  n.startWatchdog(() => true);
  await settle();
  tick();
  tick();
  await settle();
  t.is(calls, 1);
  release();
  await settle();
  tick();
  await settle();
  t.is(calls, 2);
});

test('startWatchdog twice is an error; without WatchdogSec it returns false', (t) => {
  const { transport } = recordingTransport();
  const { scheduler } = manualScheduler();
  const n = createSystemdNotifier({
    env: systemdEnv,
    pid: 42,
    logger: createMemoryLogger(),
    transport,
    scheduler,
  });
  n.startWatchdog(() => true);
  t.throws(() => n.startWatchdog(() => true), { message: 'the systemd watchdog is already running' });
  const plain = createSystemdNotifier({
    env: { NOTIFY_SOCKET: '/x' },
    logger: createMemoryLogger(),
    transport,
  });
  t.is(plain.watchdogIntervalMs, undefined);
  t.false(plain.startWatchdog(() => true));
});

test('loop heartbeat is healthy until the loop stays silent longer than allowed', (t) => {
  let now = 1000;
  const clock = { monotonicMs: () => now, nowMs: () => now };
  const hb = createLoopHeartbeat({ clock, maxSilenceMs: 500 });
  now += 500;
  t.true(hb.healthy());
  now += 1;
  t.false(hb.healthy());
  hb.beat();
  t.true(hb.healthy());
  t.is(hb.silenceMs(), 0);
  t.throws(() => createLoopHeartbeat({ clock, maxSilenceMs: 0 }), {
    message: 'Expected a positive number of milliseconds for maxSilenceMs but received number 0',
  });
});

test('until READY=1 a live start asks for more time a step at a time, up to the cap', async (t) => {
  let now = 0;
  const { n, sent, jobs, tick, logger } = notifierUnderTest({
    clock: { monotonicMs: () => now },
    startExtension: { stepMs: 90_000, everyMs: 30_000, capMs: 200_000 },
  });
  t.true(n.extendStartWhileAlive());
  t.false(n.extendStartWhileAlive(), 'one extension loop at a time');
  t.is(jobs[0]?.ms, 30_000);
  await settle();
  t.deepEqual(sent, [['EXTEND_TIMEOUT_USEC=90000000']], 'the first request goes out at once');
  now = 150_000;
  tick();
  await settle();
  t.deepEqual(sent.at(-1), ['EXTEND_TIMEOUT_USEC=50000000'], 'never past the cap');
  now = 200_000;
  tick();
  await settle();
  t.is(sent.length, 2, 'nothing asked for at the cap');
  t.true(jobs[0]?.cancelled);
  t.true(logger.lines.some((l) => JSON.parse(l).msg.startsWith('the start is still not serving')));
});

test('READY=1 ends the start extension; none is asked for after it or outside systemd', async (t) => {
  const { n, sent, jobs, tick } = notifierUnderTest();
  n.extendStartWhileAlive();
  await n.ready();
  t.true(jobs[0]?.cancelled);
  tick();
  await settle();
  t.deepEqual(sent, [['EXTEND_TIMEOUT_USEC=90000000'], ['READY=1']]);
  t.false(n.extendStartWhileAlive(), 'the start is over');
  const outside = createSystemdNotifier({ env: {}, logger: createMemoryLogger() });
  t.false(outside.extendStartWhileAlive());
});
