// Engine hosts: the model runs in a child process; crashes there become errors here, and the agent side
// carries on.
import test from 'ava';
import { EngineError, EngineHostClient } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { engineOrSkip, expectedOutput, media, models } from './_engine.js';

if (engineOrSkip(test, 'engine host')) {
  test('a host loads a model and streams the same text as llm_demo; MNN stdout goes to the log', async (t) => {
    const logger = createMemoryLogger();
    await using host = await EngineHostClient.start({ name: 'tiny-llm', logger });
    const loaded = await host.load(models.tinyLlm);
    t.deepEqual(loaded.capabilities, { vision: false, audio: false, talker: false });
    const pieces: string[] = [];
    const generation = host.generate('Hello');
    for await (const piece of generation) pieces.push(piece);
    const result = await generation.result;
    t.is(pieces.join(''), expectedOutput('tiny-llm').text);
    t.is(result.text, pieces.join(''));
    t.is(result.stats.generatedTokens, 32);
    t.deepEqual(await host.stats(), result.stats);
    // MNN prints its CPU feature line on stdout when the runtime starts; it must arrive as a log record.
    t.true(
      logger.lines.some((l) => l.includes('"msg":"mnn"') && l.includes('The device supports')),
      logger.lines.join('\n'),
    );
    const exit = await host.close();
    t.deepEqual(exit, { code: 0, signal: null });
    t.false(host.alive);
  });

  test('two models generate in parallel in two hosts', async (t) => {
    const [a, b] = await Promise.all([
      EngineHostClient.start({ name: 'a', logger: createMemoryLogger() }),
      EngineHostClient.start({ name: 'b', logger: createMemoryLogger() }),
    ]);
    try {
      await Promise.all([a.load(models.tinyLlm), b.load(models.tinyVlm)]);
      t.not(a.pid, b.pid);
      const [ra, rb] = await Promise.all([a.complete('Hello'), b.complete('Hello', { images: [media.red] })]);
      t.is(ra.text, expectedOutput('tiny-llm').text);
      t.is(rb.text, expectedOutput('tiny-vlm', 'media/test_red_64x64.png').text);
      t.true(rb.stats.visionUs > 0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test('abort through the host stops within one token', async (t) => {
    await using host = await EngineHostClient.start({ logger: createMemoryLogger() });
    await host.load(models.tinyLlm);
    const abort = new AbortController();
    const seenAtAbort = 3;
    let pieces = 0;
    const generation = host.generate('Hello', { signal: abort.signal, maxNewTokens: 2000 });
    for await (const _ of generation) {
      if (++pieces === seenAtAbort) abort.abort();
    }
    const result = await generation.result;
    t.is(result.finishReason, 'aborted');
    // The host pushes each decoded piece without waiting for the consumer (HostGeneration buffers them), so the
    // pieces it sent before the cancel reached it are in flight; they still arrive, and are counted here. The
    // abort flag is checked before every decode step (docs/ENGINE.md), so once the host sees the cancel it
    // finishes at most the step it is in: it decoded the pieces the consumer saw plus at most one more.
    const inFlight = pieces - seenAtAbort;
    t.log(
      `aborted after ${seenAtAbort} pieces; ${inFlight} more were in flight; host decoded ${result.stats.generatedTokens}`,
    );
    t.true(result.stats.generatedTokens >= seenAtAbort, `${result.stats.generatedTokens}`);
    t.true(
      result.stats.generatedTokens <= seenAtAbort + inFlight + 1,
      `host decoded ${result.stats.generatedTokens} tokens but sent only ${pieces} pieces (${inFlight} after the abort)`,
    );
    t.is((await host.complete('Hello')).text, expectedOutput('tiny-llm').text);
  });

  test('bad input in a host is an error and the host stays healthy', async (t) => {
    await using host = await EngineHostClient.start({ logger: createMemoryLogger() });
    await t.throwsAsync(() => host.complete('Hello'), {
      instanceOf: EngineError,
      message: 'engine host: generate needs a loaded model (send load first)',
    });
    await t.throwsAsync(() => host.load('/nonexistent/config.json'), {
      message: 'LLM config file not found: /nonexistent/config.json',
    });
    const refused = await t.throwsAsync(() => host.load(models.tinyLlm, { backend_type: 'opencl' }));
    t.is((refused as EngineError | undefined)?.code, 'EBACKEND');
    await host.load(models.tinyOmniAudio);
    await t.throwsAsync(() => host.complete('Hello', { audios: [{ samples: new Float32Array(100) }] }), {
      message: 'audio too short: 100 samples at 16 kHz (PCM input); at least 160 (10 ms) are needed',
    });
    t.true(host.alive);
    t.is((await host.complete('Hello')).text, expectedOutput('tiny-omni-audio').text);
  });

  test('SIGKILL of a host mid-generation fails the request with the signal; the client restarts', async (t) => {
    const logger = createMemoryLogger();
    const host = await EngineHostClient.start({ name: 'victim', logger });
    try {
      await host.load(models.tinyLlm);
      const exits: unknown[] = [];
      host.events.on('exit', (e) => exits.push(e));
      const generation = host.generate('Hello', { maxNewTokens: 2000 });
      const pid = host.pid;
      const err = await t.throwsAsync(async () => {
        for await (const _ of generation) host.kill('SIGKILL');
      });
      t.true(err instanceof EngineError);
      t.is((err as EngineError).code, 'EHOSTEXIT');
      t.is(err?.message, `engine host victim (pid ${pid}) exited with signal SIGKILL during generate`);
      await t.throwsAsync(() => generation.result, { message: err!.message });
      t.false(host.alive);
      t.deepEqual(exits, [{ code: null, signal: 'SIGKILL', expected: false }]);
      await t.throwsAsync(() => host.stats(), {
        message: 'engine host victim is not running (it exited with signal SIGKILL); cannot stats',
      });
      await host.restart();
      t.true(host.alive);
      t.not(host.pid, pid);
      await host.load(models.tinyLlm);
      t.is((await host.complete('Hello')).text, expectedOutput('tiny-llm').text);
    } finally {
      await host.close();
    }
  });
}
