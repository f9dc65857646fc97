import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { probeEngineInfo } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { repoRoot } from '../helpers/paths.js';

// `mnn-edge bench models` in a child process, as an operator or a script runs it: with `--json`, stdout must be
// one JSON document and nothing else (MNN prints its CPU banner on stdout of the process that loads it).

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import=tsx', 'agent/cli/mnn-edge.ts', ...args], {
      cwd: repoRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

// Asked of an engine host, so that this test process does not load MNN either.
const engine = await probeEngineInfo({ logger: createMemoryLogger() });
const gate = engine.available ? test : test.skip;
if (!engine.available) console.log(`bench-cli: engine tests skipped, ${engine.reason}`);

gate('bench models --list --json prints one JSON document on stdout, nothing before or after', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const r = await cli(['bench', 'models', '--list', '--json', '--data-dir', dataDir]);
  t.is(r.code, 0, r.stderr);
  let doc: { board: string; engineVersion: string; results: unknown[]; stored: unknown[] };
  try {
    doc = JSON.parse(r.stdout) as typeof doc;
  } catch (err) {
    t.fail(`stdout is not one JSON document (${(err as Error).message}):\n${r.stdout}`);
    return;
  }
  t.is(doc.engineVersion, engine.available ? engine.info.mnnVersion : '');
  t.deepEqual(doc.results, []);
  t.deepEqual(doc.stored, []);
  t.is(typeof doc.board, 'string');
});

test('without an engine addon, probing fails with the engine message and prints nothing on stdout', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const r = await cli(['bench', 'models', '--json', '--data-dir', dataDir], {
    ...process.env,
    MNN_EDGE_ENGINE_ADDON: join(dataDir, 'missing.node'),
  });
  t.is(r.code, 1);
  t.is(r.stdout, '');
  t.regex(r.stderr, /MNN engine not available: the engine addon is not built/);
});

test('without an engine addon, --list still lists the stored results and says why there is no placement', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { ...process.env, MNN_EDGE_ENGINE_ADDON: join(dataDir, 'missing.node') };
  const json = await cli(['bench', 'models', '--list', '--json', '--data-dir', dataDir], env);
  t.is(json.code, 0, json.stderr);
  const doc = JSON.parse(json.stdout) as {
    engineVersion: unknown;
    engine: { available: boolean };
    stored: unknown[];
  };
  t.is(doc.engineVersion, null);
  t.false(doc.engine.available);
  t.deepEqual(doc.stored, []);
  const text = await cli(['bench', 'models', '--list', '--data-dir', dataDir], env);
  t.is(text.code, 0, text.stderr);
  t.regex(
    text.stdout,
    /^board .+: 0 stored result\(s\)\n\nMNN engine not available: the engine addon is not built/,
  );
  t.regex(
    text.stdout,
    /Set MNN_ROOT .* npm run build:engine\. Without it there is no placement to show\.\n$/,
  );
});
