import test from 'ava';
import type { SlotsConfig } from '../../agent/config/sections/slots.js';
import { buildHaDiscovery } from '../../agent/fleet/ha-discovery.js';
import type { ModelKind, PlanCatalog } from '../../agent/plan/types.js';
import { slotChoicePatch, slotChoiceSource, slotChoices } from '../../agent/settings/slot-select.js';

const model = (id: string, kind: ModelKind, version = '1.0.0') => ({ id, version, kind, variants: [] });
const catalog: PlanCatalog = {
  models: [
    model('tiny-llm', 'llm'),
    model('tiny-llm', 'llm', '2.0.0'),
    model('qwen-vl', 'vlm'),
    model('silero-vad', 'vad'),
    model('whisper', 'asr'),
  ],
};

test('each slot offers none, its built-ins and the installed models whose task fits', (t) => {
  const choices = slotChoices(catalog, { 'voice.tts': { model: 'gone-tts' } });
  t.deepEqual(choices, [
    { slot: 'voice.vad', options: ['none', 'energy-vad (built-in)', 'silero-vad'] },
    { slot: 'voice.asr', options: ['none', 'whisper'] },
    { slot: 'voice.llm', options: ['none', 'qwen-vl', 'tiny-llm'] },
    // Configured but not installed: still listed, so the select shows what the slot is set to.
    { slot: 'voice.tts', options: ['none', 'gone-tts'] },
    { slot: 'vision.vlm', options: ['none', 'qwen-vl'] },
  ]);
});

test('a choice becomes the settings patch: same model keeps its keys, none turns the slot off', (t) => {
  const slots = { 'voice.llm': { model: 'tiny-llm', variant: 'int4', enabled: false } };
  t.deepEqual(slotChoicePatch(slots, 'voice.llm', 'tiny-llm'), {
    slots: { 'voice.llm': { model: 'tiny-llm', variant: 'int4' } },
  });
  t.deepEqual(slotChoicePatch(slots, 'voice.llm', 'qwen-vl'), {
    slots: { 'voice.llm': { model: 'qwen-vl' } },
  });
  t.deepEqual(slotChoicePatch({ 'voice.llm': { model: 'a' } }, 'voice.llm', 'none'), {
    slots: { 'voice.llm': { model: 'a', enabled: false } },
  });
  t.deepEqual(slotChoicePatch(undefined, 'voice.llm', 'none'), {});
  t.deepEqual(slotChoicePatch(undefined, 'voice.vad', 'energy-vad (built-in)'), {
    slots: { 'voice.vad': { builtin: 'energy-vad' } },
  });
  t.throws(() => slotChoicePatch(undefined, 'voice.x', 'a'), { message: /Unknown slot "voice\.x"/ });
});

test('Home Assistant gets one model select per slot, reading the config document, sending select-slot-model', (t) => {
  const cfg = buildHaDiscovery({
    deviceId: 'edge-1',
    agentVersion: '0.1.0',
    temperatureMetrics: [],
    slots: [{ name: 'voice.llm', backends: ['cpu'] }],
    modelSlots: [{ slot: 'voice.llm', options: ['none', 'tiny-llm'] }],
  });
  const select = cfg.cmps['mnn_edge_edge-1_slot_voice_llm_model_select']!;
  t.like(select, {
    p: 'select',
    name: 'voice.llm model',
    options: ['none', 'tiny-llm'],
    state_topic: 'mnn-edge/edge-1/config',
    command_topic: 'mnn-edge/edge-1/cmd/select-slot-model',
  });
  t.truthy(cfg.cmps['mnn_edge_edge-1_slot_voice_llm_placement'], 'next to the backend select');
  // CPU, memory, three slot sensors (one of them the active model), two selects, the models update: no id clashes.
  t.is(Object.keys(cfg.cmps).length, 8);
});

test('the choices are read again only after an install, a removal or a settings change', (t) => {
  let reads = 0;
  const listeners: Array<() => void> = [];
  const store = {
    on: (_event: 'installed' | 'removed', l: () => void) => {
      listeners.push(l);
      return () => undefined;
    },
  };
  let slots: SlotsConfig = {};
  const source = slotChoiceSource({
    catalog: () => {
      reads++;
      return catalog;
    },
    store: () => store,
  });
  source(slots);
  source(slots);
  t.is(reads, 1);
  for (const l of listeners) l();
  source(slots);
  t.is(reads, 2);
  slots = { 'voice.llm': { model: 'tiny-llm' } };
  t.deepEqual(source(slots).find((c) => c.slot === 'voice.llm')?.options, ['none', 'qwen-vl', 'tiny-llm']);
  t.is(reads, 3);
});
