// Wyoming `synthesize` answered by MNN's omni talker: the tiny random-weight talker (engine/tools/tiny-talker)
// serves voice.tts on a running agent, and the PCM reaches a protocol client as 16-bit chunks at 24 kHz.
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import test from 'ava';
import type { AgentConfig } from '../../agent/config/schema.js';
import { createAgent } from '../../agent/main.js';
import { createWorkloadsModule } from '../../agent/workloads/module.js';
import {
  cachedTinyTalker,
  DEFAULT_TALKER_TOKENS,
  tinyTalkerToolchainMissing,
} from '../../engine/tools/tiny-talker/make-tiny-talker.js';
import { createMemoryLogger } from '../../lib/log.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { skipWithLine } from '../helpers/skip.js';
import { WyomingTestClient } from '../helpers/wyoming-client.js';
import { engineOrSkip } from './_engine.js';
import { slotRuntimeModules } from './_slots.js';

const UTTERANCE = (DEFAULT_TALKER_TOKENS * 2 - 8) * 240;

if (engineOrSkip(test, 'Wyoming synthesize on the talker')) {
  const missing = tinyTalkerToolchainMissing();
  const talker = missing ? undefined : await cachedTinyTalker();
  if (talker === undefined) {
    skipWithLine(`SKIP Wyoming talker test: the tiny talker cannot be built here: ${missing}`);
  } else {
    test('synthesize on the talker slot: audio-start at 24 kHz, the utterance in chunks, audio-stop', async (t) => {
      const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-wyoming-talker-');
      const config: AgentConfig = {
        ...base,
        slots: { 'voice.tts': { model: 'tiny-talker' } },
        wyoming: { enabled: true, bind: '127.0.0.1', port: 0 },
      };
      const slots = slotRuntimeModules([{ path: dirname(talker), id: 'tiny-talker' }]);
      const workloads = createWorkloadsModule({ runtime: slots.runtime, agentVersion: 'test' });
      const agent = createAgent(config, {
        logger: createMemoryLogger(),
        modules: [...slots.modules, workloads],
      });
      await agent.start();
      t.teardown(async () => {
        await agent.stop('test');
        rmSync(dataDir, { recursive: true, force: true });
      });
      await slots.settled();
      const port = workloads.wyomingAnnouncement()?.port;
      if (port === undefined) return t.fail('the Wyoming server is not listening');
      const c = await WyomingTestClient.connect(port);
      t.teardown(() => c.socket.destroy());
      c.send('synthesize', { text: 'Hello from the board' });
      await c.next('audio-stop');
      const types = c.events.map((e) => e.type);
      t.is(types[0], 'audio-start');
      t.deepEqual(c.events[0]!.data, { rate: 24000, width: 2, channels: 1 });
      const chunks = c.events.filter((e) => e.type === 'audio-chunk');
      t.true(chunks.length >= 3, `${chunks.length} chunks`);
      for (const ch of chunks) t.deepEqual(ch.data, { rate: 24000, width: 2, channels: 1 });
      t.is(
        chunks.reduce((n, ch) => n + ch.payload!.length / 2, 0),
        UTTERANCE,
      );
    });
  }
}
