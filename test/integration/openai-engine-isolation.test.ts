import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { STORE_FILE } from '../../agent/main.js';
import { openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelStore } from '../../models/index.js';
import { modelFixturesDir } from '../helpers/paths.js';
import { spawnAgentRun } from '../helpers/run-agent.js';
import { skipWithLine } from '../helpers/skip.js';
import { until } from '../helpers/until.js';

const engine = engineAvailability();
if (!engine.available) {
  skipWithLine(`SKIP engine isolation of mnn-edge run: ${unavailableMessage(engine.reason)}`);
} else {
  test('mnn-edge run serves slot models from engine hosts; the agent maps no engine library; stdout is JSON', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-isolation-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    // Installed as an operator would (mnn-edge models import), before the daemon starts.
    const db = openStore(join(dataDir, STORE_FILE), { migrations: allMigrations });
    const { store } = ModelStore.open({ dataDir, db, log: createMemoryLogger() });
    for (const name of ['tiny-llm', 'silero-vad'])
      await store.import(join(modelFixturesDir, name), { version: '1.0.0' });
    store.close();
    db.close();
    const child = spawnAgentRun(dataDir, {
      config: { slots: { 'voice.vad': { model: 'silero-vad' }, 'voice.llm': { model: 'tiny-llm' } } },
    });
    t.teardown(() => child.kill('SIGKILL'));
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const wait = async (what: string, pred: () => boolean) => {
      await until(pred, what, { stepMs: 50 }).catch((err: Error) => {
        throw new Error(`${err.message}:\n${out}`);
      });
    };
    await wait('listening', () => /"msg":"listening".*?"port":\d+/.test(out));
    const port = Number(/"msg":"listening".*?"port":(\d+)/.exec(out)![1]);
    const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
    const auth = { Authorization: `Bearer ${token}` };

    const answer = (await (
      await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          model: 'tiny-llm',
          messages: [{ role: 'user', content: 'Hello' }],
          max_tokens: 4,
        }),
      })
    ).json()) as { usage?: { completion_tokens: number }; error?: unknown };
    t.is(answer.usage?.completion_tokens, 4, JSON.stringify(answer));

    const runtime = (await (
      await fetch(`http://127.0.0.1:${port}/api/runtime`, { headers: auth })
    ).json()) as {
      state: { instances: Array<{ modelId: string; pid: number; status: string }> };
    };
    const hosts = runtime.state.instances.map((i) => [i.modelId, i.status]).sort();
    t.deepEqual(hosts, [
      ['silero-vad', 'ready'],
      ['tiny-llm', 'ready'],
    ]);
    t.true(runtime.state.instances.every((i) => i.pid !== child.pid));

    // The dashboard's overview reports the engine too: from the runtime's child-process probe, not in-process.
    const overview = await fetch(`http://127.0.0.1:${port}/api/overview`, { headers: auth });
    t.is(overview.status, 200);

    // The agent's own address space: no addon, no libMNN. The hosts' do have them.
    const maps = readFileSync(`/proc/${child.pid}/maps`, 'utf8');
    t.false(/mnn_edge_engine\.node|libMNN/.test(maps), 'the agent process mapped the engine');
    const hostMaps = readFileSync(`/proc/${runtime.state.instances[0]!.pid}/maps`, 'utf8');
    t.true(/mnn_edge_engine\.node/.test(hostMaps));

    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    t.is(await exited, 0);
    const lines = out.trim().split('\n');
    const notJson = lines.filter((l) => {
      try {
        JSON.parse(l);
        return false;
      } catch {
        return true;
      }
    });
    t.deepEqual(notJson, []);
    // MNN's CPU banner came from a host, as a log record.
    t.true(lines.some((l) => l.includes('"msg":"mnn"') && l.includes('The device supports')));
  });
}
