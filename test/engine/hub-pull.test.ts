// From a hub to an answer: tiny-llm and tiny-vlm pulled from the Hugging Face and ModelScope stand-ins into a
// real store, then placed on voice.llm and vision.vlm by the real runtime and answering in engine hosts with
// the outputs llm_demo recorded for the same fixtures.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { slotSpecsFromConfig } from '../../agent/config/sections/slots.js';
import { catalogFromStore } from '../../agent/plan/from-catalog.js';
import { engineHostFactory } from '../../agent/runtime/engine/engine-host-adapter.js';
import { procSystemMemory } from '../../agent/runtime/engine/proc-memory.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import { openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import { probeEngineInfo } from '../../engine/index.js';
import { systemClock } from '../../lib/clock.js';
import { Downloader } from '../../lib/download/downloader.js';
import { createMemoryLogger } from '../../lib/log.js';
import { defaultHubHttpPolicy } from '../../models/hub/http.js';
import { HuggingFaceClient } from '../../models/hub/huggingface.js';
import { ModelScopeClient } from '../../models/hub/modelscope.js';
import { pullFromHub } from '../../models/hub/pull.js';
import { parseHubSource } from '../../models/hub/source.js';
import { ModelCatalog, ModelStore } from '../../models/index.js';
import { repoFromDir, startHuggingFaceStandin, startModelScopeStandin } from '../helpers/hub-standins.js';
import { modelFixturesDir } from '../helpers/paths.js';
import { engineOrSkip, expectedOutput, media } from './_engine.js';
import { testBoard } from './_slots.js';

if (engineOrSkip(test, 'hub pull')) {
  test.serial('pulled from the hubs, placed on voice.llm and vision.vlm, answering', async (t) => {
    const hf = await startHuggingFaceStandin([
      repoFromDir('taobao-mnn', 'tiny-llm-MNN', join(modelFixturesDir, 'tiny-llm')),
    ]);
    const ms = await startModelScopeStandin([
      repoFromDir('MNN', 'tiny-vlm-MNN', join(modelFixturesDir, 'tiny-vlm')),
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'hub-engine-'));
    const log = createMemoryLogger(5000);
    const db = openStore(join(dir, 'agent.db'), { migrations: allMigrations });
    const { store } = ModelStore.open({ dataDir: dir, db, log });
    const policy = { ...defaultHubHttpPolicy, allowLoopbackHttp: true };
    const common = { store, workRoot: join(dir, 'hub-downloads'), headroomBytes: 0 };
    let runtime: Runtime | undefined;
    try {
      const llm = await pullFromHub(parseHubSource('hf://taobao-mnn/tiny-llm-MNN'), {
        ...common,
        client: new HuggingFaceClient({ endpoint: hf.endpoint, policy }),
        downloader: new Downloader({ headroomBytes: 0 }),
      });
      const vlm = await pullFromHub(parseHubSource('ms://MNN/tiny-vlm-MNN'), {
        ...common,
        client: new ModelScopeClient({ endpoint: ms.endpoint, policy }),
        downloader: new Downloader({ headroomBytes: 0 }),
      });
      const info = await probeEngineInfo({ logger: log, cwd: dir });
      if (!info.available) throw new Error(`engine not available: ${info.reason}`);
      runtime = new Runtime({
        db,
        clock: systemClock,
        log,
        hosts: engineHostFactory({ engineVersion: info.info.mnnVersion, log, cwd: dir }),
        memory: procSystemMemory('/'),
        sources: {
          board: () => testBoard,
          catalog: () => catalogFromStore(new ModelCatalog(store).variants()),
        },
      });
      await runtime.configure(
        slotSpecsFromConfig({
          'voice.llm': { model: llm.ref.id, contextTokens: 256 },
          'vision.vlm': { model: vlm.ref.id, contextTokens: 256 },
        }),
      );
      runtime.start();
      await runtime.settled();
      for (const slot of ['voice.llm', 'vision.vlm'] as const)
        t.is(
          runtime.slotInfo(slot)?.status,
          'placed',
          `${slot}: ${JSON.stringify(runtime.state().failures)}`,
        );
      const text = await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 32 });
      t.is(text.text, expectedOutput('tiny-llm').text);
      const seen = await runtime.serving.generate('vision.vlm', {
        prompt: 'Hello',
        images: [media.red],
        maxNewTokens: 32,
      });
      t.is(seen.text, expectedOutput('tiny-vlm', 'media/test_red_64x64.png').text);
    } finally {
      await runtime?.stop();
      store.close();
      db.close();
      await hf.close();
      await ms.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
