// `systemctl reload` (ExecReload: SIGHUP) at any moment after systemd let it through: READY=1 goes out as soon as
// the agent answers, before every module has started, and Node's default for SIGHUP is to exit, which systemd
// counts as a clean stop and does not restart. The system tier found an agent stopped that way by a reload during
// its start. Here: SIGHUP the moment the agent serves; it keeps running and reloads once its start is done.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { spawnAgentRun } from '../helpers/run-agent.js';

test('a SIGHUP during the start is applied once the agent has started, and does not stop it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-sighup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const child = spawnAgentRun(join(dir, 'data'));
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.teardown(() => child.kill('SIGKILL'));
  const until = async (what: string, seen: () => boolean) => {
    // A generous budget for a busy machine; it bounds the wait, it asserts no speed.
    for (let i = 0; i < 2400 && !seen(); i++) {
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!seen()) t.fail(`${what} did not come (exit ${child.exitCode}):\n${out}`);
  };
  await until('"serving"', () => out.includes('"msg":"serving"'));
  t.false(out.includes('"module":"settings"'), 'the SIGHUP comes before the last module has started');
  child.kill('SIGHUP');
  await until('the reload', () => out.includes('"msg":"reloaded"'));
  t.true(out.includes('"msg":"reload asked for while starting: it runs once the agent has started"'));
  t.is(child.exitCode, null, 'the agent is still running');
  child.kill('SIGHUP');
  await until('a second reload', () => out.split('"msg":"reloaded"').length > 2);
  child.kill('SIGTERM');
  t.is(await exited, 0);
});
