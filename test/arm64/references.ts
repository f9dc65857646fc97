// The arm64 tier's references: MNN's own llm_demo from the cross-built prefix, run (through QEMU) on every case
// the fixtures recorded on x86, at each precision the tier checks. Our engine must give exactly these texts in
// the same build; the x86 recording is compared only through the margin rule (test/helpers/margin-rule.ts).
// Recorded once per prefix (keyed by libMNN.so's and llm_demo's contents) and cached outside the repository.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Precision, runLlmDemo } from '../helpers/llm-demo.js';
import { fixturesDir, modelFixturesDir } from '../helpers/paths.js';

/** v2: the decoder at the asked precision, the encoder at its own (engine's encoderPrecision), as a host loads. */
const RECIPE = 'v2';

/** The precisions the tier checks our engine at: fp32 (NEON) and low (Arm82 fp16 where the CPU has it). */
const TIER_PRECISIONS: readonly Precision[] = ['normal', 'low'];
/** Also `high`, the fixtures' own config, which the engine, voice and Wyoming tests load as it is. */
const REFERENCE_PRECISIONS: readonly Precision[] = ['high', ...TIER_PRECISIONS];

export interface RecordedCase {
  model: string;
  prompt: string;
  image: string | null;
  audio: string | null;
  promptTokens: number;
  decodeTokens: number;
  outputTokenIds: number[];
  top1Top2LogitMargins: number[];
  stoppedByStopToken: boolean;
  text: string;
}

export interface ReferenceCase {
  model: string;
  /** The fixture prompt with <fixtures> still in it, as in expected-outputs.json. */
  prompt: string;
  image: string | null;
  audio: string | null;
  precision: Precision;
  text: string;
  promptTokens: number;
  decodeTokens: number;
  stoppedByStopToken: boolean;
}

export interface ReferenceFile {
  prefix: string;
  key: string;
  deviceSupports: string | undefined;
  recordedAt: string;
  cases: ReferenceCase[];
}

export function recordedCases(): RecordedCase[] {
  const file = JSON.parse(readFileSync(join(modelFixturesDir, 'expected-outputs.json'), 'utf8')) as {
    cases: Array<RecordedCase & { audio?: string | null }>;
  };
  return file.cases.map((c) => ({ ...c, audio: c.audio ?? null }));
}

/** The prompt as llm_demo and the engine read it: <fixtures> made absolute. */
export function promptOf(c: { prompt: string }): string {
  return c.prompt.replaceAll('<fixtures>', fixturesDir);
}

function digestOf(paths: readonly string[]): string {
  const h = createHash('sha256');
  for (const p of paths) h.update(readFileSync(p));
  return h.digest('hex').slice(0, 16);
}

/** Records (or reads the cached) references for the llm_demo in `prefix`/bin. */
export async function referencesFor(
  prefix: string,
  cacheDir: string,
  progress: (line: string) => void,
): Promise<{ path: string; file: ReferenceFile }> {
  const binary = join(prefix, 'bin', 'llm_demo');
  if (!existsSync(binary)) throw new Error(`${binary} is missing: the prefix was installed without llm_demo`);
  // The recipe's version is part of the key: a cache recorded with other configs is never read.
  const key = `${RECIPE}-${digestOf([join(prefix, 'lib', 'libMNN.so'), binary])}`;
  const path = join(cacheDir, `references-${key}.json`);
  if (existsSync(path)) return { path, file: JSON.parse(readFileSync(path, 'utf8')) as ReferenceFile };
  const cases: ReferenceCase[] = [];
  let deviceSupports: string | undefined;
  const all = recordedCases();
  const total = all.length * REFERENCE_PRECISIONS.length;
  for (const precision of REFERENCE_PRECISIONS) {
    for (const c of all) {
      const config = join(modelFixturesDir, c.model, 'config.json');
      const maxNewTokens = (JSON.parse(readFileSync(config, 'utf8')) as { max_new_tokens?: number })
        .max_new_tokens;
      const run = await runLlmDemo({
        binary,
        config,
        prompt: promptOf(c),
        precision,
        arch: 'arm64',
      });
      deviceSupports ??= run.deviceSupports;
      cases.push({
        model: c.model,
        prompt: c.prompt,
        image: c.image,
        audio: c.audio,
        precision,
        text: run.text,
        promptTokens: run.promptTokens,
        decodeTokens: run.decodeTokens,
        // A stop token ends generation before max_new_tokens (the text then ends with end_with, "\n").
        stoppedByStopToken: run.decodeTokens < (maxNewTokens ?? 32),
      });
      progress(
        `references: ${cases.length}/${total} (${c.model}${(c.image ?? c.audio) ? ` + ${c.image ?? c.audio}` : ''}, ${precision})`,
      );
    }
  }
  const file: ReferenceFile = { prefix, key, deviceSupports, recordedAt: new Date().toISOString(), cases };
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(`${path}.tmp`, JSON.stringify(file, null, 1));
  renameSync(`${path}.tmp`, path);
  return { path, file };
}
