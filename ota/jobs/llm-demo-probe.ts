// A HealthProbe that runs MNN's own `llm_demo` on the active model directory and reads the engine's timing
// block. It measures the real engine on the real files, which is what the gate needs, without the agent's
// engine host; the runtime's probe replaces it once models are served in-process.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MnnEdgeError } from '../../lib/errors.js';
import type { HealthProbe, ProbeRequest, ProbeResult } from '../../lib/ota-ports.js';

export interface LlmDemoProbeOptions {
  /** Path of the llm_demo binary. */
  binary: string;
  /** Directory of the active version of a model (holding config.json). */
  modelDir: (modelId: string, version: string) => string | undefined;
  env?: NodeJS.ProcessEnv;
}

export function parseLlmDemoOutput(
  stdout: string,
  stderr = '',
): ProbeResult & { promptTokens: number; decodeTokens: number } {
  const num = (re: RegExp, what: string) => {
    const m = re.exec(stdout);
    if (!m) {
      // llm_demo exits 0 even when the model did not load; its error line says why.
      const why = `${stdout}\n${stderr}`.split('\n').find((l) => /error/i.test(l));
      throw new MnnEdgeError('EPROBE', `llm_demo printed no ${what}${why ? ` (${why.trim()})` : ''}`);
    }
    return Number(m[1]);
  };
  const promptTokens = num(/prompt tokens num = (\d+)/, 'prompt token count');
  const decodeTokens = num(/decode tokens num = (\d+)/, 'decode token count');
  const prefillSpeed = num(/prefill speed = ([\d.]+) tok\/s/, 'prefill speed');
  const decodeSpeed = num(/decode speed = ([\d.]+) tok\/s/, 'decode speed');
  const textStart = stdout.indexOf('\n', stdout.indexOf('prompt file is'));
  const textEnd = stdout.indexOf('#####');
  const text = textStart !== -1 && textEnd > textStart ? stdout.slice(textStart + 1, textEnd).trim() : '';
  // The prefill time is printed with 10 ms resolution; tokens / speed keeps the engine's precision.
  const ttftMs = prefillSpeed > 0 ? (promptTokens / prefillSpeed) * 1000 : Number.POSITIVE_INFINITY;
  return { ttftMs, decodeTokensPerSecond: decodeSpeed, text, promptTokens, decodeTokens };
}

export class LlmDemoProbe implements HealthProbe {
  readonly #o: LlmDemoProbeOptions;
  constructor(options: LlmDemoProbeOptions) {
    this.#o = options;
  }

  async measure(req: ProbeRequest): Promise<ProbeResult> {
    const dir = this.#o.modelDir(req.modelId, req.version);
    if (dir === undefined) throw new MnnEdgeError('EPROBE', `No active version of ${req.modelId} to probe`);
    // llm_demo creates a tmp_<hash> directory in its working directory: give it a scratch one.
    const scratch = mkdtempSync(join(tmpdir(), 'ota-probe-'));
    try {
      const prompt = req.image ? `<img>${req.image}</img>${req.prompt}` : req.prompt;
      writeFileSync(join(scratch, 'prompt.txt'), `${prompt}\n`);
      const { stdout, stderr } = await run(
        this.#o.binary,
        [join(dir, 'config.json'), 'prompt.txt', String(req.maxNewTokens)],
        scratch,
        req.timeoutMs,
        this.#o.env,
      );
      return parseLlmDemoOutput(stdout, stderr);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
}

function run(
  bin: string,
  args: string[],
  cwd: string,
  timeoutMs: number,
  env?: NodeJS.ProcessEnv,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd, env: env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new MnnEdgeError('EPROBE', `Cannot run ${bin}: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve({ stdout: out, stderr: err });
      const tail = (err || out).trim().split('\n').slice(-3).join(' | ');
      reject(
        new MnnEdgeError(
          'EPROBE',
          signal === 'SIGKILL'
            ? `llm_demo did not answer within ${timeoutMs} ms`
            : `llm_demo exited with ${signal ?? `code ${code}`}: ${tail}`,
        ),
      );
    });
  });
}
