import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import test, { type ExecutionContext } from 'ava';
import { main } from '../../agent/cli/main.js';
import { loadConfigWithInputs } from '../../agent/config/load.js';
import { OVERLAY_FILE, OverlayStore } from '../../agent/config/overlay-store.js';
import type { AgentConfig } from '../../agent/config/schema.js';
import { SettingsService } from '../../agent/settings/service.js';

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-settings-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await main(argv, { stdout, stderr, env: {} });
  return { code, out, err };
}

function setup(t: ExecutionContext, file: Record<string, unknown> = {}) {
  const dir = tempDir(t);
  const path = join(dir, 'agent.json');
  const dataDir = join(dir, 'data');
  writeFileSync(path, JSON.stringify(file));
  const load = (flags: Record<string, unknown> = {}) =>
    loadConfigWithInputs({ path, overrides: { dataDir, ...flags }, env: {} });
  const applied: AgentConfig[] = [];
  const service = (fail?: (c: AgentConfig) => boolean) => {
    const l = load();
    return new SettingsService({
      ...l,
      apply: async (next) => {
        applied.push(next);
        if (fail?.(next)) throw new Error('the Wyoming port is taken');
        return { reloaded: true };
      },
      now: () => new Date('2026-12-02T04:00:00Z'),
    });
  };
  return { dir, path, dataDir, load, service, applied };
}

test('defaults < file < overlay < flags, each key with its source; the overlay survives a restart', async (t) => {
  const s = setup(t, { tags: ['lab'], voice: { maxNewTokens: 100 }, http: { port: 9000 } });
  const svc = s.service();
  const r = await svc.change({
    patch: { voice: { maxNewTokens: 64, systemPrompt: 'Be brief.' } },
    who: 'test',
  });
  t.is(r.revision, 1);
  t.deepEqual(r.applied.sort(), ['voice.maxNewTokens', 'voice.systemPrompt']);
  t.deepEqual(r.restartRequired, []);
  const again = s.load({ http: { port: 9001 } });
  t.is((again.config['voice'] as { maxNewTokens: number }).maxNewTokens, 64);
  t.is(again.sources.get('voice.maxNewTokens'), 'overlay');
  t.is(again.sources.get('tags'), 'file');
  t.is(again.sources.get('http.port'), 'flag');
  t.is(again.sources.get('http.bind'), 'default');
  t.is(again.inputs.overlay.revision, 1);
  // null hands the key back to the file
  const svc2 = s.service();
  await svc2.change({ patch: { voice: { maxNewTokens: null } }, who: 'test' });
  t.is(s.load().sources.get('voice.maxNewTokens'), 'file');
  const file = JSON.parse(readFileSync(join(s.dataDir, OVERLAY_FILE), 'utf8')) as {
    revision: number;
    overlay: unknown;
  };
  t.is(file.revision, 2);
  t.deepEqual(file.overlay, { voice: { systemPrompt: 'Be brief.' } });
});

test('the same schema and messages as the file; keys that lock a user out are file-only', async (t) => {
  const s = setup(t);
  const svc = s.service();
  await t.throwsAsync(svc.change({ patch: { voice: { maxNewTokens: 99999 } }, who: 'x' }), {
    message: /voice\.maxNewTokens: expected a number <= 8192, got 99999/,
  });
  await t.throwsAsync(svc.change({ patch: { http: { port: 81 }, mqtt: { password: 'x' } }, who: 'x' }), {
    message: /http\.port: is changed only in the configuration file .*; mqtt\.password: is changed only/,
  });
  await t.throwsAsync(svc.change({ patch: { voice: { sytemPrompt: 'x' } }, who: 'x' }), {
    message: /voice\.sytemPrompt: is changed only in the configuration file/,
  });
  t.is(svc.revision, 0);
  t.false(existsSync(join(s.dataDir, OVERLAY_FILE)));
});

test('expect-revision: the later of two changes wins only when its revision matches, else a conflict naming it', async (t) => {
  const s = setup(t);
  const svc = s.service();
  await svc.change({ patch: { tags: ['a'] }, who: 'dashboard', expectRevision: 0 });
  await t.throwsAsync(svc.change({ patch: { tags: ['b'] }, who: 'fleet', expectRevision: 0 }), {
    message: /settings are at revision 1, not 0/,
  });
  const ok = await svc.change({ patch: { tags: ['b'] }, who: 'fleet', expectRevision: 1 });
  t.is(ok.revision, 2);
  const history = svc.history();
  t.deepEqual(
    history.map((e) => [e.revision, e.who, e.changes]),
    [
      [2, 'fleet', [{ key: 'tags', old: ['a'], new: ['b'] }]],
      [1, 'dashboard', [{ key: 'tags', old: [], new: ['a'] }]],
    ],
  );
});

test('a slot named in a change replaces the slot whole (model vs builtin), and voice.tts + voice.omni is refused', async (t) => {
  const s = setup(t, { slots: { 'voice.vad': { model: 'silero', variant: 'fp32' } } });
  const svc = s.service();
  await svc.change({ patch: { slots: { 'voice.vad': { builtin: 'energy-vad' } } }, who: 'x' });
  t.deepEqual((svc.config['slots'] as Record<string, unknown>)['voice.vad'], { builtin: 'energy-vad' });
  t.is(svc.sources.get('slots.voice.vad.builtin'), 'overlay');
  t.false(svc.sources.has('slots.voice.vad.variant'));
  await t.throwsAsync(
    svc.change({ patch: { slots: { 'voice.tts': { model: 'a' }, 'voice.omni': { model: 'b' } } }, who: 'x' }),
    { message: /voice\.tts and voice\.omni are both enabled/ },
  );
  t.is(svc.revision, 1);
});

test('a change whose apply fails is rolled back: the previous overlay is written back and applied again', async (t) => {
  const s = setup(t);
  const svc = s.service((c) => (c['wyoming'] as { port?: number } | undefined)?.port === 10400);
  await t.throwsAsync(svc.change({ patch: { wyoming: { enabled: true, port: 10400 } }, who: 'ha' }), {
    message: /port is taken/,
  });
  t.is(svc.revision, 2);
  t.deepEqual(svc.overlay, {});
  t.is(svc.config['wyoming'], undefined);
  t.is(s.applied.length, 2);
  t.regex(svc.history(1)[0]!.who, /^rollback of a change by ha/);
});

test('restart-only keys are stored and said to need a restart', async (t) => {
  const s = setup(t);
  const r = await s.service().change({ patch: { log: { level: 'debug' }, tags: ['x'] }, who: 'x' });
  t.deepEqual(r.applied, ['tags']);
  t.deepEqual(r.restartRequired, ['log.level']);
});

test('a damaged or newer overlay: start on the last good revision, say so, never overwrite it silently', async (t) => {
  const s = setup(t);
  const svc = s.service();
  await svc.change({ patch: { tags: ['good'] }, who: 'x' });
  const overlayPath = join(s.dataDir, OVERLAY_FILE);
  writeFileSync(overlayPath, '{"format":1,"revision":2,"overlay":{"tags":[');
  const damaged = s.load();
  t.deepEqual(damaged.config.tags, ['good']);
  t.is(damaged.inputs.overlay.revision, 1);
  t.regex(
    damaged.inputs.overlay.problem ?? '',
    /not valid JSON.*running on revision 1 from the change log.*kept as it is/,
  );
  t.is(readFileSync(overlayPath, 'utf8'), '{"format":1,"revision":2,"overlay":{"tags":[');

  writeFileSync(overlayPath, JSON.stringify({ format: 2, revision: 9, overlay: { tags: ['future'] } }));
  const newer = s.load();
  t.regex(newer.inputs.overlay.problem ?? '', /written by a newer agent \(format 2/);
  t.deepEqual(newer.config.tags, ['good']);
  const shown = await cli(['config', '--check', '--config', s.path, '--data-dir', s.dataDir]);
  t.regex(shown.err, /newer agent/);

  // The next change moves the file aside (and says where), then writes the next revision.
  const r = await s.service().change({ patch: { tags: ['next'] }, who: 'x' });
  t.is(r.revision, 2);
  t.regex(r.note ?? '', /moved to .*config-overlay\.json\.rejected-/);
  t.true(readdirSync(s.dataDir).some((f) => f.startsWith(`${OVERLAY_FILE}.rejected-`)));
  t.is(s.load().inputs.overlay.problem, undefined);
});

test('`mnn-edge config` shows where each value came from; `config history` prints the change log', async (t) => {
  const s = setup(t, { tags: ['lab'], mqtt: { password: 'hunter2' } });
  await s
    .service()
    .change({ patch: { voice: { systemPrompt: 'Hi.' } }, who: 'dashboard (session from ::1)' });
  const shown = await cli(['config', '--config', s.path, '--data-dir', s.dataDir]);
  t.is(shown.code, 0);
  t.regex(shown.out, /^voice\.systemPrompt +"Hi\." +\[overlay; run time\]$/m);
  t.regex(shown.out, /^tags +\["lab"\] +\[file; run time\]$/m);
  t.regex(shown.out, /^mqtt\.password +"\*\*\*" +\[file; file only\]$/m);
  t.regex(shown.out, /^http\.port +8080 +\[default; file only\]$/m);
  t.regex(shown.out, /^dataDir +".*" +\[flag; file only\]$/m);
  t.notRegex(shown.out, /hunter2/);
  const history = await cli(['config', 'history', '--config', s.path, '--data-dir', s.dataDir]);
  t.regex(
    history.out,
    /^revision 1 {2}2026-12-02T04:00:00.000Z {2}dashboard \(session from ::1\)\n {2}voice\.systemPrompt: \(file\) -> "Hi\."$/m,
  );
  // An MCP server's token, written from the Settings page, is in the overlay each entry holds: masked here too.
  await s.service().change({
    patch: {
      voice: {
        tools: { mcp: [{ name: 'home', url: 'http://ha.local:8123/api/mcp', token: 'llat-secret' }] },
      },
    },
    who: 'dashboard (session from ::1)',
  });
  const json = await cli(['config', 'history', '--json', '--config', s.path, '--data-dir', s.dataDir]);
  t.is(json.code, 0, json.err);
  t.notRegex(json.out, /llat-secret/);
  t.regex(json.out, /"token": "\*\*\*"/);
});

test('the overlay store keeps a torn last log line from hiding the others', (t) => {
  const dir = tempDir(t);
  const store = new OverlayStore(dir);
  store.commit({ tags: ['a'] }, 'x', [], new Date(0));
  writeFileSync(store.historyPath, `${readFileSync(store.historyPath, 'utf8')}{"revision":2,"at`);
  t.deepEqual(
    new OverlayStore(dir).history().map((e) => e.revision),
    [1],
  );
});

// /dev/full answers every write with ENOSPC: the kernel's own full disk, no mock needed.
test('a full disk refuses a change whole: 507-worthy error naming the disk, the overlay and its log as before', async (t) => {
  if (!existsSync('/dev/full')) return t.pass('no /dev/full on this system');
  const s = setup(t);
  const svc = s.service();
  await svc.change({ patch: { tags: ['before'] }, who: 'test' });
  const store = new OverlayStore(s.dataDir);
  const overlayBefore = readFileSync(join(s.dataDir, OVERLAY_FILE), 'utf8');
  rmSync(store.historyPath);
  symlinkSync('/dev/full', store.historyPath);
  const err = await t.throwsAsync(svc.change({ patch: { tags: ['after'] }, who: 'test' }));
  t.is((err as { code?: string }).code, 'ESTORAGE');
  t.regex(
    err?.message ?? '',
    /the disk is full \(ENOSPC .*nothing was changed, the settings are still at revision 1/,
  );
  t.is(readFileSync(join(s.dataDir, OVERLAY_FILE), 'utf8'), overlayBefore);
  t.false(existsSync(join(s.dataDir, `${OVERLAY_FILE}.prev`)));
  t.deepEqual(s.load().config['tags'], ['before']);
  // Space back: the next change is revision 2, as if the refused one had never been asked for.
  rmSync(store.historyPath);
  const r = await svc.change({ patch: { tags: ['after'] }, who: 'test' });
  t.is(r.revision, 2);
});
