// Speakers from Debian's other synthesisers, for training only (recipe 5): flite's kal, awb, rms and slt and
// festival's ked, kal and the HTS voice slt are recordings of real people made into voices, unlike espeak-ng's
// formants. Each utterance is also played 0.85–1.15 times as fast (speed perturbation), which moves pitch and
// formants together as a shorter or longer vocal tract would. The evaluation stays on held-out espeak-ng voices,
// so what these speakers add is measured on voices neither they nor the training's espeak-ng half resemble.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resample } from '../../../lib/audio/resample.js';
import { parseWav } from '../../../lib/audio/wav.js';
import { type Clip, type SpeakTake, spokenNegatives, spokenPositives } from './corpus.js';
import { pick, RATE, trimSilence } from './speech.js';

const run = promisify(execFile);

/** flite's built-in voices and the mean pitch (Hz) each speaks at. */
const FLITE_VOICES: Readonly<Record<string, number>> = { kal: 105, kal16: 105, awb: 110, rms: 100, slt: 175 };
/** festival voices from Debian's festvox-kallpc16k, festvox-kdlpc16k and festvox-us-slt-hts, each with the
 *  folder of /usr/share/festival/voices it is installed in. */
const FESTIVAL_VOICES: Readonly<Record<string, string>> = {
  kal_diphone: 'english',
  ked_diphone: 'english',
  cmu_us_slt_arctic_hts: 'us',
};
const PACKAGES = 'apt install flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts';

export interface OtherVoice {
  engine: 'flite' | 'festival';
  voice: string;
  /** Duration scale (1: the voice's own pace). */
  stretch: number;
  /** flite only: target mean pitch in Hz. */
  f0: number;
  /** Playback speed of the result (speed perturbation). */
  speed: number;
}

/** Why these speakers cannot be used here, or undefined. */
export async function otherVoicesMissing(): Promise<string | undefined> {
  const output = async (command: string, args: string[]) =>
    run(command, args).then(
      (r) => r.stdout,
      () => undefined,
    );
  // `flite -lv` lists its voices; a voice it lacks would silently be spoken by its default one.
  const listed = await output('flite', ['-lv']);
  if (listed === undefined) return `flite not found (${PACKAGES})`;
  if ((await output('festival', ['--version'])) === undefined) return `festival not found (${PACKAGES})`;
  const words = new Set(listed.split(/\s+/));
  const lacking = Object.keys(FLITE_VOICES).filter((v) => !words.has(v));
  if (lacking.length) return `flite lacks the voices ${lacking.join(', ')} (${PACKAGES})`;
  const absent = Object.entries(FESTIVAL_VOICES)
    .map(([voice, folder]) => `/usr/share/festival/voices/${folder}/${voice}`)
    .filter((d) => !existsSync(d));
  return absent.length ? `festival voices missing: ${absent.join(', ')} (${PACKAGES})` : undefined;
}

export function randomOtherVoice(r: () => number): OtherVoice {
  const stretch = 0.75 + 0.6 * r();
  if (r() < 0.3)
    return {
      engine: 'festival',
      voice: pick(r, Object.keys(FESTIVAL_VOICES)),
      stretch,
      f0: 0,
      speed: 0.85 + 0.3 * r(),
    };
  const voice = pick(r, Object.keys(FLITE_VOICES));
  const f0 = FLITE_VOICES[voice]! * (0.8 + 0.45 * r());
  return { engine: 'flite', voice, stretch, f0, speed: 0.85 + 0.3 * r() };
}

/** Synthesises into a private temporary directory; `dispose()` removes it. */
export class OtherVoices {
  readonly #dir = mkdtempSync(join(tmpdir(), 'mnn-edge-voices-'));
  #n = 0;

  /** `text` in `voice`, as 16 kHz mono float, leading and trailing silence trimmed. */
  async say(text: string, voice: OtherVoice): Promise<Float32Array> {
    const wav = join(this.#dir, `u${this.#n++}.wav`);
    const stretch = voice.stretch.toFixed(2);
    if (voice.engine === 'flite') {
      const f0 = voice.f0.toFixed(0);
      const args = [
        '-voice',
        voice.voice,
        '--setf',
        `duration_stretch=${stretch}`,
        '--setf',
        `int_f0_target_mean=${f0}`,
      ];
      await run('flite', [...args, '-t', text, '-o', wav]);
    } else {
      // festival reads a Scheme script: the text goes in a string literal, so quotes and backslashes go.
      const literal = text.replace(/["\\]/g, ' ');
      const script = `${wav}.scm`;
      writeFileSync(
        script,
        `(voice_${voice.voice})\n(Parameter.set 'Duration_Stretch ${stretch})\n` +
          `(utt.save.wave (utt.synth (Utterance Text "${literal}")) "${wav}")\n`,
      );
      await run('festival', ['-b', script]);
      rmSync(script, { force: true });
    }
    if (!existsSync(wav)) throw new Error(`${voice.engine} ${voice.voice} wrote no audio for "${text}"`);
    const parsed = parseWav(new Uint8Array(readFileSync(wav)));
    rmSync(wav, { force: true });
    // Resampling from a rate `speed` times the real one plays it `speed` times as fast.
    const from = Math.round(parsed.sampleRate * voice.speed);
    return trimSilence(resample(parsed.channels[0]!, from, RATE));
  }

  dispose(): void {
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

const label = (v: OtherVoice) => `${v.engine} ${v.voice} x${v.stretch.toFixed(2)} @${v.speed.toFixed(2)}`;

/** These speakers as the corpus's voice: each take in one drawn at random. */
function otherVoiceSpeaker(voices: OtherVoices): SpeakTake {
  return async (text, r) => {
    const voice = randomOtherVoice(r);
    return { speech: await voices.say(text, voice), label: label(voice) };
  };
}

/** `count` positives of `phrase` in these speakers, placed as the espeak-ng positives are (corpus.ts). */
export function otherVoicePositives(
  voices: OtherVoices,
  phrase: string,
  count: number,
  seed: number,
): Promise<Clip[]> {
  return spokenPositives(otherVoiceSpeaker(voices), phrase, count, seed);
}

/** `seconds` of negatives in these speakers: sentences (a quarter near misses of `phrase`), a fifth noise. */
export function otherVoiceNegatives(
  voices: OtherVoices,
  phrase: string,
  seconds: number,
  seed: number,
): Promise<Clip[]> {
  return spokenNegatives(otherVoiceSpeaker(voices), phrase, seconds, seed);
}
