import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { composeConfig } from '../../agent/config/load.js';
import { microphonePresent, shippedWakeDefaults } from '../../agent/config/wake-default.js';
import { SYSTEM_WAKE_DIR } from '../../models/wake-shipped/locate.js';

// voice.wake by default: the shipped keyword goes on the slot where a microphone is and the keyword is shipped,
// and only where the configuration names no model for the slot. No microphone: nothing changes.

const work = mkdtempSync(join(tmpdir(), 'wake-default-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));

/** A shipped tree as the Debian package lays it out (locate.ts reads default.json and wake.json's model). */
function shippedTree(): string {
  const dir = mkdtempSync(join(work, 'shipped-'));
  writeFileSync(join(dir, 'default.json'), JSON.stringify({ keyword: 'hey_computer', why: 'test' }));
  mkdirSync(join(dir, 'hey_computer'));
  writeFileSync(
    join(dir, 'hey_computer', 'wake.json'),
    JSON.stringify({ keywords: [], model: { id: 'wake-hey_computer', version: '1.0.0' } }),
  );
  return dir;
}

/** A board root whose ALSA lists a capture device, or only playback. */
function boardRoot(capture: boolean): string {
  const root = mkdtempSync(join(work, 'root-'));
  mkdirSync(join(root, 'proc', 'asound'), { recursive: true });
  writeFileSync(
    join(root, 'proc', 'asound', 'pcm'),
    `00-00: HDMI 0 : HDMI 0 : playback 1\n${capture ? '01-00: USB Audio : USB Audio : playback 1 : capture 1\n' : ''}`,
  );
  return root;
}

const env = (wakeDir: string) => ({ MNN_EDGE_WAKE_DIR: wakeDir, MNN_EDGE_CACHE: join(work, 'no-cache') });

function compose(file: Record<string, unknown>, e: NodeJS.ProcessEnv) {
  return composeConfig({ source: 'test', file, flags: {}, env: { ...e, MNN_EDGE_DATA_DIR: work } }, {});
}

test('a microphone is an ALSA capture device, or an input the configuration reads through ALSA', (t) => {
  t.true(microphonePresent({ root: boardRoot(true) }));
  t.false(microphonePresent({ root: boardRoot(false) }));
  t.false(microphonePresent({ root: join(work, 'no-proc') }));
  t.true(microphonePresent({ root: join(work, 'no-proc'), voice: { input: { source: 'alsa' } } }));
  t.false(microphonePresent({ root: join(work, 'no-proc'), voice: { input: { source: 'wav' } } }));
});

test('with a microphone and the shipped keyword, voice.wake names it, as a default', (t) => {
  const { config, sources } = compose({ root: boardRoot(true) }, env(shippedTree()));
  t.deepEqual((config['slots'] as Record<string, unknown>)['voice.wake'], { model: 'wake-hey_computer' });
  t.is(sources.get('slots.voice.wake.model'), 'default');
});

test('without a microphone nothing changes', (t) => {
  const { config } = compose({ root: boardRoot(false) }, env(shippedTree()));
  t.is((config['slots'] as Record<string, unknown> | undefined)?.['voice.wake'], undefined);
});

test('a model the configuration names for voice.wake stays; so does a slot turned off', (t) => {
  const root = boardRoot(true);
  const e = env(shippedTree());
  const named = compose({ root, slots: { 'voice.wake': { model: 'my-wake', version: '2.0.0' } } }, e);
  t.deepEqual((named.config['slots'] as Record<string, unknown>)['voice.wake'], {
    model: 'my-wake',
    version: '2.0.0',
  });
  t.is(named.sources.get('slots.voice.wake.model'), 'file');
  const off = compose({ root, slots: { 'voice.wake': { model: 'wake-hey_computer', enabled: false } } }, e);
  t.deepEqual((off.config['slots'] as Record<string, unknown>)['voice.wake'], {
    model: 'wake-hey_computer',
    enabled: false,
  });
});

test('with a microphone but no shipped keyword, the slot stays empty', (t) => {
  if (existsSync(SYSTEM_WAKE_DIR)) {
    t.log(`wake-default: skipped: ${SYSTEM_WAKE_DIR} exists on this machine`);
    t.pass();
    return;
  }
  t.deepEqual(shippedWakeDefaults({ root: boardRoot(true) }, env(join(work, 'empty'))), {});
});
