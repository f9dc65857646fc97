// A host's speech stream once its request is aborted: nothing queued or still arriving is played.
import test from 'ava';
import { HostSpeech } from '../../engine/src/host/streams.js';
import type { SpeechChunk } from '../../engine/src/llm.js';

const chunk = (n: number): SpeechChunk => ({ samples: new Float32Array(n), sampleRate: 24_000, last: false });

test('chunks queued before an abort and pushed after it are dropped; the stream ends with the host', async (t) => {
  const speech = new HostSpeech(() => {});
  speech.push(chunk(1));
  speech.push(chunk(2));
  speech.push(chunk(3));
  const it = speech[Symbol.asyncIterator]();
  t.is((await it.next()).value?.samples.length, 1);
  // The consumer aborts after its first chunk; two were already here (a busy machine), one more is on its way.
  speech.silence();
  speech.push(chunk(4));
  const rest = it.next();
  speech.end();
  t.deepEqual(await rest, { value: undefined, done: true });
});

test('without an abort every chunk is played in order', async (t) => {
  const speech = new HostSpeech(() => {});
  for (const n of [1, 2, 3]) speech.push(chunk(n));
  speech.end();
  const got: number[] = [];
  for await (const c of speech) got.push(c.samples.length);
  t.deepEqual(got, [1, 2, 3]);
});
