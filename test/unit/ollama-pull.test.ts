// POST /api/pull through the board's model hubs, read by the official `ollama` client: Ollama's progress lines
// while a Hugging Face stand-in serves the fixture export, the installed model, and a repository that does not
// exist as the stream's error line. The routes run on a real server on loopback over a real model store and
// the agent's hub pull jobs; only the hub is a stand-in.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { Ollama } from 'ollama';
import { openStore } from '../../agent/store/database.js';
import { KeepAliveTimers } from '../../agent/workloads/ollama/keep-alive.js';
import { registerOllamaRoutes } from '../../agent/workloads/ollama/routes.js';
import { defaultDownloadPolicy } from '../../lib/download/downloader.js';
import { hubClient, hubSettings } from '../../models/hub/clients.js';
import { HubPullJobs } from '../../models/hub/pull-jobs.js';
import { ModelStore } from '../../models/index.js';
import { repoFromDir, startHuggingFaceStandin } from '../helpers/hub-standins.js';
import { modelFixturesDir } from '../helpers/paths.js';
import { loopbackRouter } from './loopback-router.js';

async function serve(t: ExecutionContext) {
  const dir = mkdtempSync(join(tmpdir(), 'ollama-pull-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const hf = await startHuggingFaceStandin([
    repoFromDir('taobao-mnn', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm')),
  ]);
  t.teardown(() => hf.close());
  const db = openStore(join(dir, 'store.db'));
  const { store } = ModelStore.open({ dataDir: join(dir, 'data'), db });
  t.teardown(() => store.close());
  const models = { sources: { hf: { endpoint: hf.endpoint }, allowLoopbackHttp: true } };
  const jobs = new HubPullJobs({
    store: () => store,
    client: (hub) => hubClient(hub, hubSettings(hub, models, {})),
    download: { ...defaultDownloadPolicy, headroomBytes: 0, backoffMs: 10 },
    workRoot: join(dir, 'data', 'hub-downloads'),
    pushIntervalMs: 1,
  });
  t.teardown(() => jobs.close());
  const { router, logger, listen } = loopbackRouter(t);
  const keepAlive = new KeepAliveTimers({
    park: async () => true,
    nowMs: () => Date.now(),
    onError: () => {},
  });
  registerOllamaRoutes({
    router,
    models: () => [],
    slots: {
      load: async () => {},
      parked: () => false,
      contextTokens: () => 2048,
      chat: () => {
        throw new Error('no chat in the pull tests');
      },
    },
    keepAlive,
    maxImageBytes: 1024,
    decodeImage: () => Promise.reject(new Error('no images here')),
    pulls: () => jobs,
    nowMs: () => Date.now(),
    logger,
  });
  const base = await listen();
  return { client: new Ollama({ host: base }), store };
}

test("a hub pull streams Ollama's progress lines and installs the model", async (t) => {
  const { client, store } = await serve(t);
  const lines: Array<{ status: string; total?: number; completed?: number; digest?: string }> = [];
  for await (const p of await client.pull({ model: 'hf.co/taobao-mnn/tiny-llm-MNN', stream: true }))
    lines.push(p);
  t.is(lines[0]?.status, 'pulling manifest');
  t.is(lines.at(-1)?.status, 'success');
  const downloads = lines.filter((l) => l.status.startsWith('pulling ') && l.total !== undefined);
  t.true(downloads.length > 0, 'progress lines with total and completed');
  t.true(downloads.every((l) => (l.completed ?? 0) <= (l.total ?? 0) && typeof l.digest === 'string'));
  t.regex(lines.at(-2)?.status ?? '', /^installed tiny-llm-mnn@1\.0\.0$/);
  t.true(store.list().some((m) => m.id === 'tiny-llm-mnn'));
  // Pulled again: nothing new to fetch, still success.
  t.is((await client.pull({ model: 'hf://taobao-mnn/tiny-llm-MNN' })).status, 'success');
});

test('a repository the hub does not have ends the stream with its error; whole, it is the status', async (t) => {
  const { client } = await serve(t);
  const err = await t.throwsAsync(async () => {
    for await (const _ of await client.pull({ model: 'hf://taobao-mnn/no-such-MNN', stream: true })) {
      // read to the end
    }
  });
  t.regex(err!.message, /no-such-MNN/);
  const whole = (await t.throwsAsync(client.pull({ model: 'hf://taobao-mnn/no-such-MNN' }))) as Error & {
    status_code: number;
  };
  t.is(whole.status_code, 500);
  t.regex(whole.message, /no-such-MNN/);
});
