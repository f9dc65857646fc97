// RHVoice's English voices (docs/WAKE.md, "RHVoice voices"): statistical parametric (HTS) voices trained on
// recordings of real speakers, mostly CMU ARCTIC's, so they add vocal tracts espeak-ng's formants do not have.
// scripts/build-rhvoice.sh builds the engine (C++, CMake) and these voices into $RHVOICE_HOME; this module speaks
// through its command-line synthesiser, RHVoice-test, at a chosen rate and pitch, and returns 16 kHz audio.
// The voices are split once, by speaker: some may train, the others only judge (the benchmark's false rejects on
// held-out RHVoice voices). A speaker flite or festival already trains on (slt; alan, possibly the same person as
// flite's awb) stays on the training side, so the judged voices are speakers no training source has.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { resample } from '../../../lib/audio/resample.js';
import { parseWav } from '../../../lib/audio/wav.js';
import { pick, RATE, trimSilence } from './speech.js';

export type RhvoiceSplit = 'train' | 'eval';

export interface RhvoiceVoice {
  /** The voice's directory under share/RHVoice/voices and its name for `-p`. */
  id: string;
  /** github:<repo>, the voice's own repository. */
  repo: string;
  gender: 'female' | 'male';
  accent: string;
  licence: string;
  split: RhvoiceSplit;
}

/** The English voices whose licence lets us train and judge with them (scripts/build-rhvoice.sh builds these). */
export const RHVOICE_VOICES: readonly RhvoiceVoice[] = [
  {
    id: 'slt',
    repo: 'RHVoice/slt-eng',
    gender: 'female',
    accent: 'US',
    licence: "CMU ARCTIC's licence (free for any use; the voice's README)",
    split: 'train',
  },
  {
    id: 'alan',
    repo: 'RHVoice/alan-eng',
    gender: 'male',
    accent: 'Scottish',
    licence: "LGPL-2.1 (no licence file in the voice's repository; RHVoice's packaging gives it its default)",
    split: 'train',
  },
  {
    id: 'bdl',
    repo: 'RHVoice/bdl-eng',
    gender: 'male',
    accent: 'US',
    licence: "LGPL-2.1 (no licence file in the voice's repository; RHVoice's packaging gives it its default)",
    split: 'eval',
  },
  {
    id: 'clb',
    repo: 'RHVoice/clb-eng',
    gender: 'female',
    accent: 'US',
    licence: "LGPL-2.1 (no licence file in the voice's repository; RHVoice's packaging gives it its default)",
    split: 'eval',
  },
  {
    id: 'ksp',
    repo: 'RHVoice/ksp-eng',
    gender: 'male',
    accent: 'Indian',
    licence: "CMU ARCTIC's licence (free for any use; the repository's `license` file)",
    split: 'eval',
  },
];

/** English voices RHVoice lists that are not used, and why. */
export const RHVOICE_LEFT_OUT: Readonly<Record<string, string>> = {
  'evgeniy-eng': 'CC BY-NC-ND 4.0: no commercial use',
  'lyubov-eng': 'CC BY-NC-ND 4.0: no commercial use',
  'dasha-eng': 'no snapshot of the repository reachable here (an RHVoice Lab voice: CC BY-NC-ND 4.0)',
};

export const rhvoiceVoices = (split: RhvoiceSplit): string[] =>
  RHVOICE_VOICES.filter((v) => v.split === split).map((v) => v.id);

/** Where scripts/build-rhvoice.sh puts the engine: $RHVOICE_HOME, else $MNN_EDGE_CACHE/rhvoice. */
export function rhvoiceHome(env: NodeJS.ProcessEnv = process.env): string {
  return (
    env['RHVOICE_HOME'] ?? join(env['MNN_EDGE_CACHE'] ?? join(homedir(), '.cache', 'mnn-edge'), 'rhvoice')
  );
}

/** `key=value` lines of a voice's `voice.info`. */
export function parseVoiceInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  return out;
}

const BUILD = 'scripts/build-rhvoice.sh builds it';

/** Why RHVoice cannot speak `voices` here (one line), or undefined. */
export function rhvoiceMissing(
  voices: readonly string[] = RHVOICE_VOICES.map((v) => v.id),
  home = rhvoiceHome(),
): string | undefined {
  if (!existsSync(join(home, 'bin', 'RHVoice-test'))) return `RHVoice is not built in ${home} (${BUILD})`;
  if (!existsSync(join(home, 'share', 'RHVoice', 'languages', 'English', 'language.info')))
    return `RHVoice in ${home} has no English language data (${BUILD})`;
  const lacking = voices.filter((id) => {
    const info = join(home, 'share', 'RHVoice', 'voices', id, 'voice.info');
    return !existsSync(info) || parseVoiceInfo(readFileSync(info, 'utf8'))['language'] !== 'English';
  });
  return lacking.length
    ? `RHVoice in ${home} lacks the English voices ${lacking.join(', ')} (${BUILD})`
    : undefined;
}

export interface RhvoiceTake {
  voice: string;
  /** RHVoice's relative rate and pitch, in per cent of the voice's own. */
  rate: number;
  pitch: number;
  /** Playback speed of the result (speed perturbation, as other-voices.ts). */
  speed: number;
}

/** A voice of `voices` at a random rate (70–140 %), pitch (80–125 %) and playback speed (0.9–1.1). */
export function randomRhvoiceTake(r: () => number, voices: readonly string[]): RhvoiceTake {
  return {
    voice: pick(r, voices),
    rate: Math.round(70 + 70 * r()),
    pitch: Math.round(80 + 45 * r()),
    speed: 0.9 + 0.2 * r(),
  };
}

export const takeLabel = (t: RhvoiceTake) =>
  `rhvoice ${t.voice} r${t.rate} p${t.pitch} @${t.speed.toFixed(2)}`;

/** RHVoice-test's arguments for `take`, writing a WAV to `out` (the text goes to its standard input). Its `-R`
 *  does not reach a file (it writes 24 kHz whatever it is given), so say() resamples instead. A voice it does not
 *  have is spoken by its default one without a word: rhvoiceMissing() checks the voices first. */
export function rhvoiceArgs(take: RhvoiceTake, out: string): string[] {
  const percent = (v: number, what: string) => {
    if (!Number.isFinite(v) || v <= 0)
      throw new Error(`RHVoice ${what} must be a positive per cent, not ${v}`);
    return String(Math.round(v));
  };
  return ['-p', take.voice, '-r', percent(take.rate, 'rate'), '-t', percent(take.pitch, 'pitch'), '-o', out];
}

/** Synthesises into a private temporary directory; `dispose()` removes it. */
export class Rhvoice {
  readonly #dir = mkdtempSync(join(tmpdir(), 'mnn-edge-rhvoice-'));
  #n = 0;
  constructor(readonly home = rhvoiceHome()) {}

  /** `text` in `take`, as 16 kHz mono float, leading and trailing silence trimmed. */
  async say(text: string, take: RhvoiceTake): Promise<Float32Array> {
    const wav = join(this.#dir, `u${this.#n++}.wav`);
    await new Promise<void>((done, fail) => {
      const child = spawn(join(this.home, 'bin', 'RHVoice-test'), rhvoiceArgs(take, wav), {
        // cmake installs the libraries beside the binary without an rpath.
        env: { ...process.env, LD_LIBRARY_PATH: join(this.home, 'lib') },
        stdio: ['pipe', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (b: Buffer) => {
        err += b.toString();
      });
      child.on('error', fail);
      child.on('close', (code) =>
        code === 0 ? done() : fail(new Error(`RHVoice-test ${take.voice} exited ${code}: ${err.trim()}`)),
      );
      child.stdin.end(text);
    });
    if (!existsSync(wav)) throw new Error(`RHVoice ${take.voice} wrote no audio for "${text}"`);
    const parsed = parseWav(new Uint8Array(readFileSync(wav)));
    rmSync(wav, { force: true });
    // Whatever rate it wrote, resampled to 16 kHz; from a rate `speed` times the real one it plays that much faster.
    return trimSilence(resample(parsed.channels[0]!, Math.round(parsed.sampleRate * take.speed), RATE));
  }

  dispose(): void {
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
