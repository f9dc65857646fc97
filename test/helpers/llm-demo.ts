// MNN's own llm_demo, run on a fixture model the way the fixtures' outputs were recorded (one prompt line, greedy,
// max_new_tokens from config.json), optionally at another precision. The arm64 tier records its references with
// the llm_demo of the same cross-build, so our engine is compared with MNN itself, not with another ISA.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { encoderPrecision } from '../../engine/index.js';

export type Precision = 'low' | 'normal' | 'high';

export interface LlmDemoRun {
  /** What llm_demo streamed between "prompt file is …" and the "#####" block (its own final newline removed). */
  text: string;
  promptTokens: number;
  decodeTokens: number;
  /** MNN's "The device supports: i8sdot:…, fp16:…, i8mm: …, sve2: …, sme2: …" line, when it printed one. */
  deviceSupports: string | undefined;
  /** Lines printed before the text (warnings such as the 48 kHz stereo channel note). */
  before: string[];
}

/** Parses llm_demo's stdout (see the fixtures README: the text sits between the prompt-file line and #####). */
export function parseLlmDemoOutput(stdout: string): LlmDemoRun {
  const start = stdout.indexOf('prompt file is ');
  if (start < 0) throw new Error(`llm_demo printed no "prompt file is" line:\n${stdout.slice(-2000)}`);
  const textStart = stdout.indexOf('\n', start) + 1;
  const end = stdout.indexOf('\n#####', textStart);
  if (end < 0) throw new Error(`llm_demo printed no ##### block:\n${stdout.slice(-2000)}`);
  const number = (label: string) => {
    const m = new RegExp(`${label} = (\\d+)`).exec(stdout.slice(end));
    if (!m) throw new Error(`llm_demo printed no "${label}"`);
    return Number(m[1]);
  };
  const device = /The device supports: [^\n]*/.exec(stdout);
  let body = stdout.slice(textStart, end);
  // Lines the engine printed before the answer (the channel warning) are not part of the text.
  const before: string[] = [];
  const warning = /^Warning: [^\n]*\n/;
  for (let m = warning.exec(body); m; m = warning.exec(body)) {
    before.push(m[0].trimEnd());
    body = body.slice(m[0].length);
  }
  return {
    text: body,
    promptTokens: number('prompt tokens num'),
    decodeTokens: number('decode tokens num'),
    deviceSupports: device?.[0],
    before,
  };
}

export interface LlmDemoOptions {
  /** The llm_demo binary (an arm64 one runs through binfmt). */
  binary: string;
  /** The model's config.json. */
  config: string;
  prompt: string;
  /**
   * Overrides config.json's precision of the decoder, as an engine host's `precision` does; the vision/audio
   * encoder keeps its own, made safe for `arch` by the engine's rule (encoderPrecision).
   */
  precision?: Precision;
  /** The CPU architecture llm_demo runs as (default: this process's). */
  arch?: string;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

export async function runLlmDemo(o: LlmDemoOptions): Promise<LlmDemoRun> {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-llm-demo-'));
  try {
    let config = o.config;
    if (o.precision !== undefined) {
      const original = JSON.parse(readFileSync(o.config, 'utf8')) as Record<string, unknown>;
      const mllm = original['mllm'] as Record<string, unknown> | undefined;
      const override = {
        ...original,
        base_dir: `${dirname(o.config)}/`,
        precision: o.precision,
        ...(mllm
          ? {
              mllm: {
                ...mllm,
                precision: encoderPrecision(mllm['precision'] as Precision | undefined, o.arch),
              },
            }
          : {}),
      };
      config = join(dir, 'config.json');
      writeFileSync(config, JSON.stringify(override));
    }
    const promptFile = join(dir, 'prompt.txt');
    writeFileSync(promptFile, `${o.prompt}\n`);
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        o.binary,
        [config, promptFile],
        // llm_demo makes its weight cache `tmp_<hash>/` in the working directory: keep it in the scratch dir,
        // out of the user's checkout.
        { cwd: dir, timeout: o.timeoutMs ?? 300_000, maxBuffer: 16 << 20, env: o.env ?? process.env },
        (err, out, errOut) => {
          if (err) reject(new Error(`${o.binary} ${config}: ${err.message}\n${errOut.slice(-2000)}`));
          else resolve(out);
        },
      );
    });
    return parseLlmDemoOutput(stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
