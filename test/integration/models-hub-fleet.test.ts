import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { CommandRegistry } from '../../agent/fleet/commands.js';
import { openStore } from '../../agent/store/database.js';
import { defaultDownloadPolicy } from '../../lib/download/downloader.js';
import { createLogger } from '../../lib/log.js';
import { registerPullModelCommand } from '../../models/hub/pull-command.js';
import { ModelStore } from '../../models/index.js';
import { memoryFile, repoFromDir, startHuggingFaceStandin } from '../helpers/hub-standins.js';
import { modelFixturesDir } from '../helpers/paths.js';

test('fleet pull-model: progress events, the final status, failures as events and errors, one pull at a time', async (t) => {
  const repo = repoFromDir('taobao-mnn', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm'));
  repo.files.push(memoryFile('big.weight', Buffer.alloc(2 * 1024 * 1024, 3)));
  const hub = await startHuggingFaceStandin([repo]);
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-fleet-'));
  const db = openStore(join(dataDir, 'agent.db'));
  const { store } = ModelStore.open({ dataDir, db });
  t.teardown(async () => {
    store.close();
    db.close();
    await hub.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const registry = new CommandRegistry();
  registerPullModelCommand(registry, {
    store: () => store,
    models: { sources: { hf: { endpoint: hub.endpoint }, allowLoopbackHttp: true } },
    download: { ...defaultDownloadPolicy, headroomBytes: 0 },
    dataDir,
    env: {},
    publishEvent: (type, data) => events.push({ type, data }),
  });
  const logger = createLogger({ write: () => {} });
  const first = registry.dispatch(
    'pull-model',
    { source: 'hf://taobao-mnn/tiny-llm-MNN' },
    { deviceId: 'd1', logger },
  );
  const second = await registry.dispatch(
    'pull-model',
    { source: 'hf://taobao-mnn/tiny-llm-MNN' },
    { deviceId: 'd1', logger },
  );
  t.false(second.ok);
  t.regex(
    JSON.stringify(second),
    /A pull is already running \(hf:\/\/taobao-mnn\/tiny-llm-MNN\); one at a time/,
  );
  const outcome = await first;
  t.true(outcome.ok, JSON.stringify(outcome));
  t.like(outcome, {
    ok: true,
    result: {
      status: 'installed',
      model: 'tiny-llm-mnn@1.0.0',
      repo: 'taobao-mnn/tiny-llm-MNN',
      commit: repo.commit,
      trust: 'unsigned-tofu',
    },
  });
  const progress = events.filter((e) => e.type === 'models.pull.progress');
  t.true(progress.length >= 3, `${progress.length} progress events`);
  t.true(progress.some((e) => e.data['phase'] === 'downloading' && (e.data['percent'] as number) < 100));
  t.is(progress.at(-1)!.data['percent'], 100);
  t.like(events.at(-1), { type: 'models.pull.done', data: { status: 'installed', trust: 'unsigned-tofu' } });

  const again = await registry.dispatch(
    'pull-model',
    { source: 'hf://taobao-mnn/tiny-llm-MNN' },
    { deviceId: 'd1', logger },
  );
  t.like(again, { ok: true, result: { status: 'unchanged' } });

  const missing = await registry.dispatch(
    'pull-model',
    { source: 'hf://taobao-mnn/nope' },
    { deviceId: 'd1', logger },
  );
  t.false(missing.ok);
  t.like(events.at(-1), { type: 'models.pull.failed', data: { code: 'EHUBNOTFOUND' } });
  const bad = await registry.dispatch(
    'pull-model',
    { source: 'https://example.com/pkg.tar' },
    { deviceId: 'd1', logger },
  );
  t.false(bad.ok);
  t.regex(JSON.stringify(bad), /Not a hub model/);
});
