// `mnn-edge bench models` end to end: a model imported into a scratch data directory, probed with the real
// engine, stored, and shown with the placement the numbers give.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import test from 'ava';
import { main } from '../../agent/cli/main.js';
import { modelFixturesDir } from '../helpers/paths.js';
import { engineOrSkip } from './_engine.js';

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  stderr.on('data', (c: Buffer) => {
    err += c.toString();
  });
  const code = await main(argv, { stdout, stderr, env: { ...process.env, MNN_EDGE_DATA_DIR: '' } });
  return { code, out, err };
}

if (engineOrSkip(test, 'bench models')) {
  test.serial(
    'bench models probes every candidate, stores the numbers and shows the placement',
    async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-cli-'));
      try {
        const imported = await cli([
          'models',
          'import',
          join(modelFixturesDir, 'tiny-llm'),
          '--id',
          'tiny-llm',
          '--version',
          '1.0.0',
          '--task',
          'llm',
          '--data-dir',
          dir,
        ]);
        t.is(imported.code, 0, imported.err);
        const run = await cli(['bench', 'models', '--json', '--data-dir', dir]);
        t.is(run.code, 0, run.err);
        const doc = JSON.parse(run.out) as {
          results: {
            modelId: string;
            version: string;
            ok: boolean;
            config: string;
            decodeTokPerSec: number;
          }[];
          stored: unknown[];
          engineVersion: string;
        };
        t.is(doc.engineVersion, '3.6.1');
        t.true(doc.results.length >= 1);
        for (const r of doc.results) {
          t.deepEqual([r.modelId, r.version, r.ok], ['tiny-llm', '1.0.0', true]);
          // Every usable backend is probed: the CPU, and Vulkan where a device answers (lavapipe here).
          t.regex(r.config, /^(cpu|vulkan) t\d+ p:low m:low cpus:/);
          t.true(r.decodeTokPerSec > 0);
        }
        t.true(doc.results.some((r) => r.config.startsWith('cpu ')));
        t.is(doc.stored.length, doc.results.length);

        const list = await cli(['bench', 'models', '--list', '--data-dir', dir]);
        t.is(list.code, 0, list.err);
        t.regex(
          list.out,
          /tiny-llm@1\.0\.0 +\S+ +cpu t\d+ p:low m:low cpus:\S+ +\d+ +[\d.]+ +[\d.]+ +\d+ +ok/,
        );
        t.notRegex(list.out, /probing/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test.serial('bench refuses what it cannot do with a clear message', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-cli-'));
    try {
      const unknown = await cli(['bench', 'gpus', '--data-dir', dir]);
      t.is(unknown.code, 2);
      t.regex(unknown.err, /^mnn-edge bench: unknown benchmark 'gpus'\nUsage: mnn-edge bench models/);
      const none = await cli(['bench', 'models', '--data-dir', dir]);
      t.is(none.code, 1);
      t.is(none.err, 'mnn-edge bench: No models installed: nothing to measure\n');
      const missing = await cli(['bench', 'models', '--model', 'qwen', '--data-dir', dir]);
      t.is(missing.err, 'mnn-edge bench: No installed model matches qwen\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
