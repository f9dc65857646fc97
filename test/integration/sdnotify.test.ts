import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createSystemdNotifier, createSystemdNotifyTransport } from '../../agent/systemd/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { startNotifyListener } from './sdnotify-listener.js';

// The real path end to end: our notifier -> systemd-notify(1) -> an AF_UNIX datagram socket bound by python3.

const haveSystemdNotify = spawnSync('systemd-notify', ['--version'], { stdio: 'ignore' }).status === 0;
const haveTools = haveSystemdNotify && spawnSync('python3', ['--version'], { stdio: 'ignore' }).status === 0;
const realTest = haveTools ? test.serial : test.serial.skip;
if (!haveTools)
  console.warn('sdnotify integration: systemd-notify or python3 missing; install systemd and python3');

function tempSocket(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-notify-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'notify.sock');
}

realTest('READY=1, STATUS= and STOPPING=1 reach a listener bound to NOTIFY_SOCKET', async (t) => {
  const listener = await startNotifyListener(tempSocket(t));
  t.teardown(() => listener.close());
  const notifier = createSystemdNotifier({
    env: { NOTIFY_SOCKET: listener.path, PATH: process.env['PATH'] },
    logger: createMemoryLogger(),
  });
  t.true(await notifier.status('starting: migrating the store'));
  t.true(await notifier.ready());
  t.true(await notifier.stopping());
  await listener.waitFor('STOPPING=1');
  // systemd-notify follows each message with a BARRIER=1 datagram of its own (systemd >= 246); the agent's
  // messages are the rest, in order. MAINPID= is added by newer systemd-notify versions.
  const ours = listener.received
    .map((n) => n.data.split('\n').filter((l) => l !== '' && !l.startsWith('MAINPID=')))
    .filter((lines) => !(lines.length === 1 && lines[0] === 'BARRIER=1'));
  t.deepEqual(ours, [['STATUS=starting: migrating the store'], ['READY=1'], ['STOPPING=1']]);
});

realTest('the watchdog feeds WATCHDOG=1 to the socket and stops when the loop stalls', async (t) => {
  const listener = await startNotifyListener(tempSocket(t));
  t.teardown(() => listener.close());
  let healthy = true;
  const notifier = createSystemdNotifier({
    env: { NOTIFY_SOCKET: listener.path, WATCHDOG_USEC: '400000', WATCHDOG_PID: String(process.pid) },
    logger: createMemoryLogger(),
  });
  t.is(notifier.watchdogIntervalMs, 200);
  t.true(notifier.startWatchdog(() => healthy));
  await listener.waitFor('WATCHDOG=1');
  healthy = false;
  // Let a ping already in flight land (systemd-notify can be slow on a loaded machine), then count: no more
  // may arrive while the loop is stalled, though the timer keeps ticking every 200 ms.
  await new Promise((r) => setTimeout(r, 1500));
  const atStall = listener.received.filter((n) => n.data.includes('WATCHDOG=1')).length;
  await new Promise((r) => setTimeout(r, 700));
  t.is(listener.received.filter((n) => n.data.includes('WATCHDOG=1')).length, atStall);
  await notifier.stopping();
  await listener.waitFor('STOPPING=1');
});

realTest('a socket nobody listens on is reported with systemd-notify’s reason', async (t) => {
  const transport = createSystemdNotifyTransport({ socket: tempSocket(t) });
  const err = await t.throwsAsync(transport.send(['READY=1']));
  t.regex(
    err?.message ?? '',
    /^systemd-notify READY=1 exited with status 1: .*(No such file|not found|Connection refused)/i,
  );
});

test('a missing systemd-notify is named in the error', async (t) => {
  const transport = createSystemdNotifyTransport({
    socket: '/nonexistent',
    command: 'systemd-notify-absent',
  });
  await t.throwsAsync(transport.send(['READY=1']), {
    message:
      'Cannot run systemd-notify-absent: spawn systemd-notify-absent ENOENT (systemd-notify-absent not found; it is part of systemd)',
  });
});
