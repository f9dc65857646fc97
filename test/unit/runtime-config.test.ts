import test from 'ava';
import { parseConfig } from '../../agent/config/load.js';
import { planPolicyFromConfig, slotSpecsFromConfig } from '../../agent/config/sections/slots.js';

test('slots config becomes the config source, with default priorities and context sizes', (t) => {
  const specs = slotSpecsFromConfig({
    'vision.vlm': { model: 'qwen2-vl-2b' },
    'voice.vad': { builtin: 'energy-vad' },
    'voice.llm': { model: 'qwen2-vl-2b', version: '1.1.0', variant: 'int4', priority: 85 },
    'voice.tts': { model: 'cosyvoice-300m', enabled: false },
  });
  t.deepEqual(specs, [
    { slot: 'voice.vad', use: { builtin: 'energy-vad' }, priority: 100, contextTokens: 0, enabled: true },
    {
      slot: 'voice.llm',
      use: { model: { id: 'qwen2-vl-2b', version: '1.1.0', variant: 'int4' } },
      priority: 85,
      contextTokens: 2048,
      enabled: true,
    },
    {
      slot: 'voice.tts',
      use: { model: { id: 'cosyvoice-300m' } },
      priority: 70,
      contextTokens: 1024,
      enabled: false,
    },
    {
      slot: 'vision.vlm',
      use: { model: { id: 'qwen2-vl-2b' } },
      priority: 50,
      contextTokens: 2048,
      enabled: true,
    },
  ]);
});

test('voice.tts and voice.omni cannot both be on', (t) => {
  t.throws(() => slotSpecsFromConfig({ 'voice.tts': { model: 'a' }, 'voice.omni': { model: 'b' } }), {
    message:
      'Invalid slots: voice.tts and voice.omni are both enabled; the voice pipeline uses one or the other',
  });
  t.is(
    slotSpecsFromConfig({ 'voice.tts': { model: 'a' }, 'voice.omni': { model: 'b', enabled: false } }).length,
    2,
  );
});

test('the config file is validated: unknown slots, bad keys and values are named', (t) => {
  t.throws(() => parseConfig({ slots: { 'voice.chat': { model: 'x' } } }, 'agent.json'), {
    message:
      'Invalid configuration in agent.json: slots["voice.chat"]: is not a known key (expected one of: ' +
      'voice.vad, voice.wake, voice.asr, voice.llm, voice.tts, voice.omni, vision.vlm)',
  });
  t.throws(() => parseConfig({ slots: { 'voice.llm': { model: 'x', threads: 4 } } }, 'agent.json'), {
    message:
      'Invalid configuration in agent.json: slots["voice.llm"].threads: is not a known key (expected one of: ' +
      'model, version, variant, priority, contextTokens, enabled)',
  });
  t.throws(() => parseConfig({ runtime: { budgetFraction: 1.5 } }, 'agent.json'), {
    message:
      'Invalid configuration in agent.json: runtime.budgetFraction: expected a number <= 0.95, got 1.5',
  });
});

test('runtime config sets the planner budget', (t) => {
  const p = planPolicyFromConfig({ budgetFraction: 0.6, reserveMiB: 512 });
  t.is(p.budgetFraction, 0.6);
  t.is(p.reserveBytes, 512 * 1024 * 1024);
  t.is(planPolicyFromConfig(undefined).budgetFraction, 0.75);
});
