// Wyoming `wake` on a running agent: the project's keyword package (quick recipe) imported into the store and
// placed on voice.wake, `describe` lists it, and `detect` + 22.05 kHz audio of "hey computer" in a held-out voice
// answers `detection`, silence answers `not-detected`, through the repo's protocol client.
import { rmSync } from 'node:fs';
import test from 'ava';
import type { AgentConfig } from '../../agent/config/schema.js';
import { createAgent } from '../../agent/main.js';
import { resample } from '../../agent/workloads/audio/pcm.js';
import { createWorkloadsModule } from '../../agent/workloads/module.js';
import { positiveClip, randomVoice, splitVoices } from '../../engine/tools/wake-keyword/corpus.js';
import {
  ensureWakeKeyword,
  keywordToolsMissing,
  QUICK_RECIPE,
} from '../../engine/tools/wake-keyword/make-keyword.js';
import { rng } from '../../engine/tools/wake-keyword/speech.js';
import { createMemoryLogger } from '../../lib/log.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { skipWithLine } from '../helpers/skip.js';
import { WyomingTestClient } from '../helpers/wyoming-client.js';
import { engineOrSkip } from './_engine.js';
import { slotRuntimeModules } from './_slots.js';

function s16(samples: Float32Array): Buffer {
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++)
    out.writeInt16LE(Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767), i * 2);
  return out;
}

/** The first event of one of these types after index `from` (a detected run never sends not-detected). */
async function firstOf(c: WyomingTestClient, from: number, types: string[]) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const found = c.events.slice(from).find((e) => types.includes(e.type));
    if (found) return found;
    if (c.socket.destroyed || Date.now() > deadline) throw new Error(`no ${types.join('/')} event`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const missing = engineOrSkip(test, 'Wyoming wake') ? await keywordToolsMissing(QUICK_RECIPE) : 'engine';
if (missing && missing !== 'engine') {
  skipWithLine(`SKIP Wyoming wake test: ${missing}`);
}

if (!missing) {
  test('describe lists the wake program; detect + audio gives detection or not-detected', async (t) => {
    t.timeout(20 * 60_000);
    const dir = await ensureWakeKeyword({ quick: true });
    const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-wyoming-wake-');
    const config: AgentConfig = {
      ...base,
      slots: { 'voice.wake': { model: 'hey-computer' } },
      wyoming: { enabled: true, bind: '127.0.0.1', port: 0 },
    };
    const slots = slotRuntimeModules([{ path: dir, id: 'hey-computer' }]);
    const workloads = createWorkloadsModule({
      runtime: slots.runtime,
      agentVersion: 'test',
      packageDir: (ref) => slots.packageDir(ref),
    });
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
    c.send('describe');
    const info = await c.next('info');
    const wake = (info.data['wake'] as Array<{ models: Array<{ name: string; phrase: string }> }>)[0]!;
    t.like(wake.models[0], { name: 'hey_computer', phrase: 'hey computer' });

    // Several clips in held-out voices: the quick model misses some, so one detection among them is the check.
    const r = rng(5);
    const split = splitVoices(2028);
    let detected = 0;
    for (let i = 0; i < 4 && detected === 0; i++) {
      const clip = await positiveClip('hey computer', randomVoice(r, split.heldOut), r);
      const pcm = s16(resample(clip.audio, 16000, 22050));
      const from = c.events.length;
      c.send('detect', { names: ['hey_computer'] });
      c.send('audio-start', { rate: 22050, width: 2, channels: 1 });
      for (let at = 0; at < pcm.length; at += 4410)
        c.send('audio-chunk', { rate: 22050, width: 2, channels: 1 }, pcm.subarray(at, at + 4410));
      c.send('audio-stop');
      const answer = await firstOf(c, from, ['detection', 'not-detected', 'error']);
      if (answer.type === 'detection') {
        detected++;
        t.is(answer.data['name'], 'hey_computer');
      }
    }
    t.is(detected, 1, 'one of four held-out "hey computer" clips detected');
    const from = c.events.length;
    c.send('detect', {});
    c.send('audio-start', { rate: 16000, width: 2, channels: 1 });
    c.send('audio-chunk', { rate: 16000, width: 2, channels: 1 }, Buffer.alloc(2 * 32000));
    c.send('audio-stop');
    t.is((await firstOf(c, from, ['detection', 'not-detected', 'error'])).type, 'not-detected');
  });
}
