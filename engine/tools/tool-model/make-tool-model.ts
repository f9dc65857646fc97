// Makes the scripted tool-call model (docs/TOOL-MODEL.md): an MNN LLM package whose greedy answer is a chosen tool
// call when the latest turn of the prompt is the user's, and a chosen final sentence when it is a tool result, with
// Qwen2.5's own chat template. This file picks the tokens, writes tokenizer.txt and the two JSON configs, compiles
// gen_tool_model.cpp against an MNN install and its source tree, and runs it for the graph and the embeddings.
//
//   npx tsx engine/tools/tool-model/make-tool-model.ts OUT_DIR [--script SCRIPT.json]
//
// SCRIPT.json: {"call": {"name": "HassTurnOn", "arguments": {"name": "kitchen light"}}, "final": "The kitchen light
// is on."} (those are the defaults). MNN_ROOT (default /opt/mnn) is the install prefix; MNN_SRC the source tree
// libMNN was built from (default: the first of /opt/src/MNN and /opt/mnn-src that exists): the generator writes
// OpType_Attention, whose schema header (schema/current/MNN_generated.h) an install does not carry.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildMnnGenerator, cachedPackage, mnnToolchain, mnnToolchainMissing } from '../mnn-generator.js';
import { type ScriptTokens, scriptTokens, type ToolScript, toolScript } from './script.js';

export {
  DEFAULT_TOOL_SCRIPT,
  type ScriptTokens,
  scriptTokens,
  type ToolScript,
  toolScript,
} from './script.js';

const run = promisify(execFile);
const toolDir = dirname(fileURLToPath(import.meta.url));
const generatorSource = join(toolDir, 'gen_tool_model.cpp');
/** Qwen2.5-Instruct's chat template (with tools), as its tokenizer_config.json carries it. */
export const CHAT_TEMPLATE_FILE = join(toolDir, 'qwen2.5-chat-template.jinja');

export interface ToolModelOptions {
  /** What the model answers; default DEFAULT_TOOL_SCRIPT. */
  script?: ToolScript;
  mnnRoot?: string;
  mnnSrc?: string;
}

/** Why the generator cannot be built here, or undefined. */
export function toolModelToolchainMissing(options: ToolModelOptions = {}): string | undefined {
  return mnnToolchainMissing(options);
}

/** Compiles the generator into `binary` (g++, C++17). */
export function buildGenerator(binary: string, options: ToolModelOptions = {}): Promise<void> {
  return buildMnnGenerator('gen_tool_model', generatorSource, binary, options);
}

/** MNN's tokenizer.txt (magic 430, type 1 = tiktoken): specials, stop ids, then one base64 token per line. */
function tokenizerText(tokens: ScriptTokens): string {
  return [
    '430 1',
    `${tokens.specialIds.length} ${tokens.stopIds.length} 0`,
    `${[...tokens.specialIds, ...tokens.stopIds].join(' ')} `,
    String(tokens.vocabulary.length),
    ...tokens.vocabulary.map((t) => t.toString('base64')),
    '',
  ].join('\n');
}

function writeConfigs(dir: string, tokens: ScriptTokens, script: ToolScript): void {
  const config = {
    llm_model: 'llm.mnn',
    llm_weight: 'llm.mnn.weight',
    backend_type: 'cpu',
    thread_num: 1,
    precision: 'high',
    memory: 'low',
    sampler_type: 'greedy',
    max_new_tokens: 32,
  };
  const llmConfig = {
    model_type: 'tool_script_qwen_like',
    hidden_size: 64,
    layer_nums: 1,
    attention_mask: 'float',
    attention_type: 'full',
    is_mrope: false,
    max_position_embeddings: 8192,
    jinja: { chat_template: readFileSync(CHAT_TEMPLATE_FILE, 'utf8'), eos: '<|im_end|>' },
  };
  writeFileSync(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  writeFileSync(join(dir, 'llm_config.json'), `${JSON.stringify(llmConfig, null, 2)}\n`);
  writeFileSync(join(dir, 'tokenizer.txt'), tokenizerText(tokens));
  // What the package answers, for the tests that use it (not read by MNN).
  writeFileSync(
    join(dir, 'tool-script.json'),
    `${JSON.stringify({ script, callText: tokens.callText, finalText: tokens.finalText, pieces: tokens.pieces }, null, 2)}\n`,
  );
}

/** Writes the whole package into outDir with an already built generator. Returns outDir's config.json. */
export async function writeToolModel(
  generator: string,
  outDir: string,
  options: ToolModelOptions = {},
): Promise<string> {
  const script = toolScript(options.script);
  const tokens = scriptTokens(script);
  const chain = tokens.chain.map(([from, to]) => `${from}:${to}`).join(',');
  const args = [
    outDir,
    '--vocab',
    String(tokens.vocabulary.length),
    '--user',
    String(tokens.userOpener),
    '--tool',
    String(tokens.toolOpener),
    '--call-first',
    String(tokens.callFirst),
    '--final-first',
    String(tokens.finalFirst),
    '--chain',
    chain,
  ];
  try {
    await run(generator, args);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw new Error(`gen_tool_model failed for ${outDir}: ${stderr.slice(-2000)}`);
  }
  writeConfigs(outDir, tokens, script);
  return join(outDir, 'config.json');
}

/** The compiled generator, cached beside the packages by its source and toolchain: other scripts reuse it. */
async function cachedGenerator(root: string, staging: string, options: ToolModelOptions): Promise<string> {
  const { mnnRoot, mnnSrc } = mnnToolchain(options);
  const key = createHash('sha256')
    .update(readFileSync(generatorSource))
    .update(JSON.stringify({ mnnRoot, mnnSrc }))
    .digest('hex')
    .slice(0, 16);
  const binary = join(root, `gen_tool_model-${key}`);
  if (existsSync(binary)) return binary;
  const built = join(staging, 'bin', 'gen_tool_model');
  await buildGenerator(built, options);
  try {
    renameSync(built, binary);
  } catch (err) {
    if (!existsSync(binary)) throw err;
  }
  return binary;
}

/**
 * The package in a cache directory keyed by the generator's source, the tokens' and this file, the template, the
 * script and the toolchain, built once and reused (also by concurrent test processes: each builds aside and renames
 * into place). Returns its config.json.
 */
export async function cachedToolModel(options: ToolModelOptions = {}): Promise<string> {
  const { mnnRoot, mnnSrc } = mnnToolchain(options);
  const script = toolScript(options.script);
  const key = createHash('sha256')
    .update(readFileSync(generatorSource))
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .update(readFileSync(join(toolDir, 'script.ts')))
    .update(readFileSync(CHAT_TEMPLATE_FILE))
    .update(JSON.stringify({ script, mnnRoot, mnnSrc }))
    .digest('hex')
    .slice(0, 16);
  const root = join(tmpdir(), 'mnn-edge-tool-model');
  return cachedPackage(root, key, async (staging, packageDir) => {
    const generator = await cachedGenerator(root, staging, options);
    await writeToolModel(generator, packageDir, { ...options, script });
  });
}

async function main(argv: string[]): Promise<void> {
  const [outArg, ...rest] = argv;
  if (!outArg || outArg.startsWith('-')) {
    throw new Error('usage: make-tool-model.ts OUT_DIR [--script SCRIPT.json]');
  }
  const options: ToolModelOptions = {};
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i];
    const value = rest[i + 1];
    if (flag === '--script' && value !== undefined) {
      options.script = toolScript(JSON.parse(readFileSync(value, 'utf8')) as unknown, value);
    } else throw new Error(`unknown or malformed option ${flag ?? ''} ${value ?? ''}`);
  }
  const outDir = resolve(outArg);
  const scratch = join(tmpdir(), `gen-tool-model-${process.pid}`);
  try {
    const generator = join(scratch, 'gen_tool_model');
    await buildGenerator(generator, options);
    console.log(await writeToolModel(generator, outDir, options));
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
