import test from 'ava';
import { configDrift, patchFromSets, splitKey } from '../../agent/operator/fleet/config-edit.js';

test('--set pairs become one merge patch; slot names keep their dots; values are JSON when they parse', (t) => {
  t.deepEqual(splitKey('slots.voice.llm.model'), ['slots', 'voice.llm', 'model']);
  t.deepEqual(
    patchFromSets([
      'slots.voice.llm.model=qwen',
      'slots.voice.llm.variant=int4',
      'voice.maxNewTokens=128',
      'wyoming.enabled=true',
      'tags=["a","b"]',
      'voice.systemPrompt=Be brief, {please}',
      'vision.watch.prompt=null',
    ]),
    {
      slots: { 'voice.llm': { model: 'qwen', variant: 'int4' } },
      voice: { maxNewTokens: 128, systemPrompt: 'Be brief, {please}' },
      wyoming: { enabled: true },
      tags: ['a', 'b'],
      vision: { watch: { prompt: null } },
    },
  );
});

test('bad --set syntax, unknown and file-only keys are refused with the key named', (t) => {
  t.throws(() => patchFromSets(['voice.systemPrompt']), { message: /--set expects key=value/ });
  t.throws(() => patchFromSets(['voice..x=1']), { message: /is not a key/ });
  t.throws(() => patchFromSets(['voice.sytemPrompt=1']), { message: /unknown key "sytemPrompt" in voice/ });
  t.throws(() => patchFromSets(['tags.x=1']), { message: /tags is a single value/ });
  t.throws(() => patchFromSets(['slots.voice.x.model=1']), { message: /unknown slot/ });
  t.throws(() => patchFromSets(['voice.maxNewTokens=1', 'voice.maxNewTokens=2']), { message: /given twice/ });
  t.throws(() => patchFromSets(['voice=5', 'voice.systemPrompt=x']), { message: /overlaps/ });
  t.throws(() => patchFromSets(['mqtt.password=x', 'http.bind=0.0.0.0']), {
    message: /mqtt\.password: is changed only in each device's configuration file.*; http\.bind: /,
  });
});

test('drift: the keys the reference names, a named slot whole, secrets masked', (t) => {
  const effective = {
    voice: { systemPrompt: 'a', maxNewTokens: 256 },
    slots: { 'voice.llm': { model: 'qwen', variant: 'int4' } },
    mqtt: { password: '***' },
    tags: ['x'],
  };
  t.deepEqual(
    configDrift(
      {
        voice: { systemPrompt: 'a', maxNewTokens: 128 },
        slots: { 'voice.llm': { model: 'qwen' }, 'voice.tts': { model: 'tts' } },
        mqtt: { password: 'hunter2' },
        tags: ['x'],
      },
      effective,
    ),
    [
      { key: 'slots.voice.llm.variant', device: 'int4', reference: undefined },
      { key: 'slots.voice.tts.model', device: undefined, reference: 'tts' },
      { key: 'voice.maxNewTokens', device: 256, reference: 128 },
    ],
  );
});
