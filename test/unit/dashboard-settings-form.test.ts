import test from 'ava';
import {
  buildPatch,
  fileOnlyRows,
  type KeyRow,
  parseField,
  SETTINGS_FIELDS,
  visibleFields,
} from '../../dashboard/src/ui/settings-fields.js';
import { slotChoices, slotPatch, slotValue } from '../../dashboard/src/ui/slot-choice.js';

// The Settings page's and the slot selects' rules, without a browser: what a form sends, what a select offers.

const rows: KeyRow[] = [
  { key: 'voice.systemPrompt', value: 'Be brief.', source: 'default', access: 'live' },
  { key: 'voice.maxNewTokens', value: 256, source: 'file', access: 'live' },
  { key: 'tags', value: ['lab'], source: 'file', access: 'live' },
  { key: 'wyoming.enabled', value: false, source: 'default', access: 'live' },
  { key: 'http.port', value: 8080, source: 'flag', access: 'file' },
  { key: 'mqtt.password', value: '***', source: 'file', access: 'file' },
  { key: 'log.level', value: 'info', source: 'default', access: 'restart' },
  { key: 'slots.voice.llm.model', value: 'tiny-llm', source: 'overlay', access: 'live' },
];
const field = (key: string) => SETTINGS_FIELDS.find((f) => f.key === key)!;

test('only the fields that changed are sent, nested as a merge patch', (t) => {
  const entered = new Map<string, string | boolean>([
    ['voice.systemPrompt', 'Be brief.'],
    ['voice.maxNewTokens', ' 128 '],
    ['tags', 'lab, kitchen ,'],
    ['wyoming.enabled', true],
  ]);
  const built = buildPatch(SETTINGS_FIELDS, rows, entered);
  t.deepEqual(built, {
    patch: { voice: { maxNewTokens: 128 }, tags: ['lab', 'kitchen'], wyoming: { enabled: true } },
    changed: ['voice.maxNewTokens', 'wyoming.enabled', 'tags'],
  });
});

test('a value that is not a number fails the whole change, naming the key', (t) => {
  const built = buildPatch(
    SETTINGS_FIELDS,
    rows,
    new Map<string, string | boolean>([
      ['voice.maxNewTokens', '12x'],
      ['tags', 'a'],
    ]),
  );
  t.deepEqual(built, { errors: ['voice.maxNewTokens: expected a number, got "12x"'] });
  t.deepEqual(parseField(field('voice.maxNewTokens'), '1.5'), {
    error: 'voice.maxNewTokens: expected a whole number, got 1.5',
  });
  t.deepEqual(parseField(field('vision.watch.intervalS'), '1.5'), { value: 1.5 });
  // Ranges are the schema's: sent as typed, refused by the agent with its own message.
  t.deepEqual(parseField(field('voice.maxNewTokens'), '0'), { value: 0 });
});

test('the wake word is offered only with a voice.wake slot; lock-out keys and secrets are read-only rows', (t) => {
  t.false(visibleFields(rows).some((f) => f.key === 'voice.wake.enabled'));
  const withWake = [
    ...rows,
    { key: 'slots.voice.wake.model', value: 'hey', source: 'file', access: 'live' } as const,
  ];
  t.true(visibleFields(withWake).some((f) => f.key === 'voice.wake.enabled'));
  t.deepEqual(
    fileOnlyRows(rows).map((r) => r.key),
    ['http.port', 'mqtt.password'],
  );
});

test('a slot select offers "none", the installed models whose task fits, and the file once overridden', (t) => {
  const installed = [
    { id: 'tiny-llm', kind: 'llm' },
    { id: 'tiny-vlm', kind: 'vlm' },
    { id: 'silero-vad', kind: 'vad' },
    { id: 'tiny-llm', kind: 'llm' },
  ];
  const llm = slotValue('voice.llm', rows);
  t.like(llm, { value: 'model:tiny-llm', model: 'tiny-llm', source: 'overlay', enabled: true });
  t.deepEqual(
    slotChoices('voice.llm', llm, installed).map((o) => o.value),
    ['none', 'model:tiny-llm', 'model:tiny-vlm', 'file'],
  );
  const vlm = slotValue('vision.vlm', rows);
  t.deepEqual(vlm, { value: 'none', enabled: true });
  t.deepEqual(
    slotChoices('vision.vlm', vlm, installed).map((o) => o.value),
    ['none', 'model:tiny-vlm'],
  );
  // A model named but since removed stays visible as what the slot asks for.
  t.deepEqual(
    slotChoices('voice.llm', llm, []).map((o) => o.label),
    ['none', 'tiny-llm (not installed)', 'as in the configuration file'],
  );
});

test('each slot choice is the merge patch the agent expects', (t) => {
  t.deepEqual(slotPatch('voice.llm', { model: 'tiny-vlm' }, rows), {
    slots: { 'voice.llm': { model: 'tiny-vlm' } },
  });
  // "none" over a model keeps a disabled entry, so the file's model does not come back.
  t.deepEqual(slotPatch('voice.llm', 'none', rows), {
    slots: { 'voice.llm': { model: 'tiny-llm', enabled: false } },
  });
  t.deepEqual(slotPatch('vision.vlm', 'none', rows), { slots: { 'vision.vlm': null } });
  t.deepEqual(slotPatch('voice.llm', 'file', rows), { slots: { 'voice.llm': null } });
  const disabled: KeyRow[] = [
    ...rows,
    { key: 'slots.voice.llm.enabled', value: false, source: 'overlay', access: 'live' },
  ];
  t.like(slotValue('voice.llm', disabled), { value: 'none', model: 'tiny-llm', enabled: false });
});
