// Conversation KV reuse on MNN's Arm82 fp16 backend (arm64 at precision "low", the precision placement picks where
// it measures faster). There, with int4 weights, the activations are quantized over the tokens prefilled together,
// so a turn that prefilled only its new tokens used to part from a whole prefill's answer. The engine now sets
// MNN's prefill chunk there (arm82ExactChunk) and keeps KV only up to a chunk boundary: every turn of the script
// (edits, a changed system prompt, regenerated answers, a barge-in) must equal the whole prefill, token for token.
// The tier script (`npm run test:arm64`) runs this under the arm64 Node through QEMU user mode.
import test from 'ava';
import { ARM82_PREFILL_CHUNK } from '../../engine/index.js';
import { engineOrSkip, media, models } from '../engine/_engine.js';
import { sameAsFullPrefill, type Turn } from '../engine/_prefix-reuse-script.js';
import { skipWithLine } from '../helpers/skip.js';

/** The turns' reuse stats: each kept KV on a chunk boundary, and some KV kept at all. */
function keptOnBoundaries(t: import('ava').ExecutionContext, turns: Turn[], chunk: number): void {
  const reuse = turns.map((x) => x.result.stats.reuse!);
  for (const [i, r] of reuse.entries()) {
    t.is(r.chunkTokens, chunk, `turn ${i + 1}`);
    t.is(r.reusedTokens % chunk, 0, `turn ${i + 1} kept ${r.reusedTokens}`);
  }
  t.true(
    reuse.some((r) => r.reusedTokens > 0),
    `some turn kept KV: ${JSON.stringify(reuse.map((r) => r.reusedTokens))}`,
  );
}

if (process.arch !== 'arm64') {
  skipWithLine(`SKIP arm64 prefix reuse: this Node is ${process.arch} (run it with npm run test:arm64)`);
} else if (engineOrSkip(test, 'arm64 prefix reuse')) {
  const low = { overrides: { precision: 'low' as const } };

  test('tiny-llm-int4 at low, with the chunk the engine sets: every turn equals a full prefill', async (t) => {
    const turns = await sameAsFullPrefill(t, models.tinyLlmInt4, 'Hello, who are you?', {}, low);
    keptOnBoundaries(t, turns, ARM82_PREFILL_CHUNK);
  });

  test('tiny-llm-int4 at low, chunk 8 (many boundaries): every turn equals a full prefill', async (t) => {
    const turns = await sameAsFullPrefill(
      t,
      models.tinyLlmInt4,
      'Hello, who are you?',
      {},
      {
        overrides: { precision: 'low', chunk: 8 },
      },
    );
    keptOnBoundaries(t, turns, 8);
  });

  // Models with vision or audio get no chunk (MNN hands media to each prefill call from the first); their KV is
  // kept up to the first medium, and the encoders run at normal on arm64 (encoderPrecision).
  test('tiny-vlm at low, an image in an earlier turn: every turn equals a full prefill', async (t) => {
    const turns = await sameAsFullPrefill(
      t,
      models.tinyVlm,
      `<img>${media.red}</img>What is this?`,
      { mediaTags: true },
      low,
    );
    t.is(turns[1]!.result.stats.reuse!.reason, 'media');
    t.is(turns[1]!.result.stats.reuse!.chunkTokens, null);
  });

  test('tiny-omni-audio at low, audio in an earlier turn: every turn equals a full prefill', async (t) => {
    const turns = await sameAsFullPrefill(
      t,
      models.tinyOmniAudio,
      `<audio>${media.speech16k}</audio>Answer this.`,
      { mediaTags: true },
      low,
    );
    t.is(turns[1]!.result.stats.reuse!.reason, 'media');
  });

  test('tiny-llm (fp32 weights) at low: every turn equals a full prefill', async (t) => {
    const turns = await sameAsFullPrefill(t, models.tinyLlm, 'Hello, who are you?', {}, low);
    keptOnBoundaries(t, turns, ARM82_PREFILL_CHUNK);
  });
}
