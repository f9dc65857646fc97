// Makes the tiny random-weight talker package (docs/TALKER.md): compiles gen_tiny_talker.cpp against an MNN
// install and its source tree, runs it, and writes the tokenizer and the two JSON configs beside its output.
//
//   npx tsx engine/tools/tiny-talker/make-tiny-talker.ts OUT_DIR [--seed N] [--talker-tokens N]
//
// MNN_ROOT (default /opt/mnn) is the install prefix (include/, lib/libMNN.so); MNN_SRC (default /opt/src/MNN) is
// the source tree libMNN was built from: the generator writes OpType_Attention, whose schema header
// (schema/current/MNN_generated.h) an install does not carry.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildMnnGenerator, cachedPackage, mnnToolchain, mnnToolchainMissing } from '../mnn-generator.js';

const run = promisify(execFile);
const toolDir = dirname(fileURLToPath(import.meta.url));
const generatorSource = join(toolDir, 'gen_tiny_talker.cpp');

export const TINY_TALKER_SAMPLE_RATE = 24000;
/** The talker's lm_head holds its end codes down, so an utterance is always this many codec tokens. */
export const DEFAULT_TALKER_TOKENS = 150;

export interface TinyTalkerOptions {
  seed?: number;
  /** talker_max_new_tokens: codec tokens per utterance (50 per second of speech). */
  talkerTokens?: number;
  mnnRoot?: string;
  mnnSrc?: string;
}

/** Why the generator cannot be built here, or undefined. */
export function tinyTalkerToolchainMissing(options: TinyTalkerOptions = {}): string | undefined {
  return mnnToolchainMissing(options);
}

/** Compiles the generator into `binary` (g++, C++17). */
export function buildGenerator(binary: string, options: TinyTalkerOptions = {}): Promise<void> {
  return buildMnnGenerator('gen_tiny_talker', generatorSource, binary, options);
}

// Byte-level vocabulary of 512 tokens, ids as gen_tiny_talker.cpp's lm_head bias assumes: 0-255 bytes, 256-261
// chat specials (258 <|im_end|> and 256 <|endoftext|> stop), then multi-byte pieces.
const SPECIALS = [
  '<|endoftext|>',
  '<|im_start|>',
  '<|im_end|>',
  '<|vision_start|>',
  '<|vision_end|>',
  '<|image_pad|>',
];
const VOCAB = 512;
const WORDS =
  'hello world the and you that is for this with have what say speak voice board edge home light turn on off please thank yes no'.split(
    ' ',
  );

function vocabulary(): Buffer[] {
  const tokens: Buffer[] = [];
  for (let b = 0; b < 256; b++) tokens.push(Buffer.from([b]));
  for (const s of SPECIALS) tokens.push(Buffer.from(s));
  const seen = new Set(tokens.map((t) => t.toString('latin1')));
  const add = (s: string) => {
    const key = Buffer.from(s).toString('latin1');
    if (tokens.length < VOCAB && !seen.has(key)) {
      seen.add(key);
      tokens.push(Buffer.from(s));
    }
  };
  for (const w of WORDS) add(` ${w}`);
  const letters = 'etaoinshrdlcumwfgypbvkjxqz';
  for (const a of letters) for (const b of letters) add(`${a}${b}`);
  return tokens;
}

/** MNN's tokenizer.txt (magic 430, type 1 = tiktoken): specials, stop ids, then one base64 token per line. */
export function tinyTokenizerText(): string {
  const tokens = vocabulary();
  const specialIds = SPECIALS.map((_, i) => 256 + i);
  const stopIds = [258, 256];
  return [
    '430 1',
    `${specialIds.length} ${stopIds.length} 0`,
    `${[...specialIds, ...stopIds].join(' ')} `,
    String(tokens.length),
    ...tokens.map((t) => t.toString('base64')),
    '',
  ].join('\n');
}

function writeConfigs(dir: string, talkerTokens: number): void {
  const config = {
    llm_model: 'llm.mnn',
    llm_weight: 'llm.mnn.weight',
    backend_type: 'cpu',
    thread_num: 1,
    precision: 'high',
    memory: 'low',
    sampler_type: 'greedy',
    max_new_tokens: 32,
    talker_max_new_tokens: talkerTokens,
    talker_speaker: 'Chelsie',
    // A runtime of its own for DiT and vocoder: MNN then runs token2wav on worker threads while the talker decodes,
    // so PCM arrives chunk by chunk instead of all after the last codec token.
    mllm: { backend_type: 'cpu', thread_num: 1, precision: 'high', memory: 'low' },
  };
  const llmConfig = {
    model_type: 'tiny_omni_talker',
    hidden_size: 64,
    layer_nums: 2,
    attention_mask: 'float',
    attention_type: 'full',
    max_position_embeddings: 2048,
    has_talker: true,
    jinja: {
      chat_template:
        '{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}',
      eos: '<|im_end|>',
    },
  };
  writeFileSync(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  writeFileSync(join(dir, 'llm_config.json'), `${JSON.stringify(llmConfig, null, 2)}\n`);
  writeFileSync(join(dir, 'tokenizer.txt'), tinyTokenizerText());
}

/** Writes the whole package into outDir with an already built generator. Returns outDir's config.json. */
export async function writeTinyTalker(
  generator: string,
  outDir: string,
  options: TinyTalkerOptions = {},
): Promise<string> {
  const seed = options.seed ?? 20261201;
  const talkerTokens = options.talkerTokens ?? DEFAULT_TALKER_TOKENS;
  if (!Number.isInteger(talkerTokens) || talkerTokens < 2 || talkerTokens > 2048)
    throw new Error(`talkerTokens must be an integer in [2, 2048], got ${talkerTokens}`);
  try {
    await run(generator, [outDir, '--seed', String(seed)]);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw new Error(`gen_tiny_talker failed for ${outDir}: ${stderr.slice(-2000)}`);
  }
  writeConfigs(outDir, talkerTokens);
  return join(outDir, 'config.json');
}

/**
 * The package in a cache directory keyed by the generator's source, this file and the options, built once and
 * reused (also by concurrent test processes: each builds aside and renames into place). Returns its config.json.
 */
export async function cachedTinyTalker(options: TinyTalkerOptions = {}): Promise<string> {
  const { mnnRoot, mnnSrc } = mnnToolchain(options);
  const key = createHash('sha256')
    .update(readFileSync(generatorSource))
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .update(JSON.stringify({ ...options, mnnRoot, mnnSrc }))
    .digest('hex')
    .slice(0, 16);
  return cachedPackage(join(tmpdir(), 'mnn-edge-tiny-talker'), key, async (staging, packageDir) => {
    const generator = join(staging, 'bin', 'gen_tiny_talker');
    await buildGenerator(generator, options);
    await writeTinyTalker(generator, packageDir, options);
  });
}

async function main(argv: string[]): Promise<void> {
  const [outArg, ...rest] = argv;
  if (!outArg || outArg.startsWith('-')) {
    throw new Error('usage: make-tiny-talker.ts OUT_DIR [--seed N] [--talker-tokens N]');
  }
  const options: TinyTalkerOptions = {};
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i];
    const value = Number(rest[i + 1]);
    if (flag === '--seed' && Number.isInteger(value) && value >= 0) options.seed = value;
    else if (flag === '--talker-tokens' && Number.isInteger(value)) options.talkerTokens = value;
    else throw new Error(`unknown or malformed option ${flag ?? ''} ${rest[i + 1] ?? ''}`);
  }
  const outDir = resolve(outArg);
  const scratch = join(tmpdir(), `gen-tiny-talker-${process.pid}`);
  try {
    const generator = join(scratch, 'gen_tiny_talker');
    await buildGenerator(generator, options);
    console.log(await writeTinyTalker(generator, outDir, options));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  });
}
