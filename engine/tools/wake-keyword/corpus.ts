// The keyword generator's corpus: which voices say what, over which background. Positives are the phrase in
// many espeak-ng voices, speeds and pitches with gain and noise; negatives are other speech (random sentences,
// words that sound like parts of the phrase), noises and silence. Held-out voices (accents and timbres) never
// appear in training, so the evaluation says how the head does on a voice it has not heard.
import {
  ACCENTS,
  concat,
  espeakVariants,
  mixInto,
  NOISE_KINDS,
  type NoiseKind,
  noise,
  pick,
  RATE,
  rng,
  say,
  scaleTo,
  type Voice,
} from './speech.js';

export interface Clip {
  audio: Float32Array;
  /** Sample where the keyword ends (positives only). */
  keywordEnd?: number;
  label: string;
}

/** Accents × variants to draw voices from; `dataPath` when some variants are made up (timbres.ts). */
export interface VoicePool {
  accents: string[];
  variants: string[];
  dataPath?: string;
}

export interface VoiceSplit {
  train: VoicePool;
  heldOut: VoicePool;
}

/** Two accents and a quarter of the timbres are kept for evaluation only. */
export function splitVoices(seed: number): VoiceSplit {
  const r = rng(seed);
  const variants = espeakVariants();
  for (let i = variants.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [variants[i], variants[j]] = [variants[j]!, variants[i]!];
  }
  const cut = Math.max(1, Math.floor(variants.length / 4));
  const heldAccents = ['en-us-nyc', 'en-gb-x-gbcwmd'];
  return {
    train: { accents: ACCENTS.filter((a) => !heldAccents.includes(a)), variants: variants.slice(cut) },
    heldOut: { accents: heldAccents, variants: variants.slice(0, cut) },
  };
}

export function randomVoice(r: () => number, pool: VoicePool): Voice {
  return {
    name: `${pick(r, pool.accents)}+${pick(r, pool.variants)}`,
    speed: 120 + Math.floor(r() * 80),
    pitch: 25 + Math.floor(r() * 50),
    ...(pool.dataPath ? { dataPath: pool.dataPath } : {}),
  };
}

const WORDS = (
  'the a to of and in is it you that he was for on are with as his they be at one have this from or had by ' +
  'word but what some we can out other were all there when up use your how said an each she which do their ' +
  'time if will way about many then them write would like so these her long make thing see him two has look ' +
  'more day could go come did number sound no most people my over know water than call first who may down ' +
  'side been now find any new work part take get place made live where after back little only round man year ' +
  'came show every good me give our under name very through just form sentence great think say help low line ' +
  'differ turn cause much mean before move right boy old too same tell does set three want air well also play ' +
  'small end put home read hand port large spell add even land here must big high such follow act why ask men ' +
  'change went light kind off need house picture try us again animal point mother world near build self earth ' +
  'father head stand own page should country found answer school grow study still learn plant cover food sun ' +
  'four between state keep eye never last let thought city tree cross farm hard start might story saw far sea ' +
  'draw left late run while press close night real life few north open seem together next white children begin ' +
  'got walk example ease paper group always music those both mark often letter until mile river car feet care ' +
  'weather kitchen lights timer music volume tomorrow morning evening temperature'
).split(' ');

/** Phrases that share sounds with typical wake phrases: the hard negatives. */
const CONFUSABLE = [
  'hey',
  'hey there',
  'hey you',
  'okay',
  'hey come here',
  'hey Cooper',
  'a commuter',
  'compute it',
  'the computer is on',
  'my computer',
  'hey what is up',
  'hey can you hear me',
  'they compute',
  'hey come pick me up',
  'computers are everywhere',
  'a cup of tea',
];

export function randomSentence(r: () => number): string {
  if (r() < 0.15) return pick(r, CONFUSABLE);
  const n = 3 + Math.floor(r() * 10);
  return Array.from({ length: n }, () => pick(r, WORDS)).join(' ');
}

/**
 * A near miss made from the wake phrase itself: one of its words swapped for another ("hey river", "my
 * computer"), or one of its words inside an unrelated sentence. The fixed list above is for "hey computer";
 * these come for any phrase.
 */
export function nearMiss(r: () => number, phrase: string): string {
  const words = phrase.split(/\s+/).filter((w) => w.length > 0);
  const i = Math.floor(r() * words.length);
  if (words.length > 1 && r() < 0.5) return words.map((w, k) => (k === i ? pick(r, WORDS) : w)).join(' ');
  const sentence = Array.from({ length: 2 + Math.floor(r() * 5) }, () => pick(r, WORDS));
  sentence.splice(Math.floor(r() * (sentence.length + 1)), 0, words[i]!);
  return sentence.join(' ');
}

export interface Background {
  kind: NoiseKind | 'silence';
  level: number;
}

export function randomBackground(r: () => number): Background {
  if (r() < 0.2) return { kind: 'silence', level: 0 };
  // -70 … -35 dBFS: a quiet room to a loud fan.
  return { kind: pick(r, NOISE_KINDS), level: 10 ** ((-70 + 35 * r()) / 20) };
}

function bed(bg: Background, samples: number, r: () => number): Float32Array {
  return bg.kind === 'silence' ? new Float32Array(samples) : noise(bg.kind, samples, bg.level, r);
}

/** Speech at a random gain (-30 … -10 dBFS RMS) over a background, with `preS` seconds before it. */
export function placeSpeech(speech: Float32Array, r: () => number, preS: number, postS: number): Clip {
  const pre = Math.round(preS * RATE);
  const post = Math.round(postS * RATE);
  const audio = bed(randomBackground(r), pre + speech.length + post, r);
  mixInto(audio, scaleTo(Float32Array.from(speech), 10 ** ((-30 + 20 * r()) / 20)), pre);
  // trimSilence kept 20 ms of pad after the last loud block.
  return { audio, keywordEnd: pre + speech.length - 320, label: '' };
}

/** The phrase as the i-th positive says it: now and then a question or with a comma, since synthesisers' prosody
 *  changes with punctuation. */
export function phraseVariant(phrase: string, i: number): string {
  return i % 5 === 3 ? `${phrase}?` : i % 5 === 4 ? phrase.replace(' ', ', ') : phrase;
}

export async function positiveClip(phrase: string, voice: Voice, r: () => number): Promise<Clip> {
  const clip = placeSpeech(await say(phrase, voice), r, 1.2 + 0.8 * r(), 0.5);
  return { ...clip, label: `positive ${voice.name} s${voice.speed} p${voice.pitch}` };
}

export async function speechClip(text: string, voice: Voice, r: () => number): Promise<Clip> {
  const clip = placeSpeech(await say(text, voice), r, 0.3 + r(), 0.3);
  return { audio: clip.audio, label: `speech ${voice.name}: ${text}` };
}

export function noiseClip(seconds: number, r: () => number): Clip {
  const kind = pick(r, NOISE_KINDS);
  const level = 10 ** ((-50 + 40 * r()) / 20);
  return { audio: noise(kind, Math.round(seconds * RATE), level, r), label: `noise ${kind}` };
}

/** Two or three sentences over each other: a room with a TV on. */
export async function babbleClip(r: () => number, pool: VoicePool): Promise<Clip> {
  const parts = await Promise.all(
    Array.from({ length: 2 + Math.floor(r() * 2) }, () => say(randomSentence(r), randomVoice(r, pool))),
  );
  const len = Math.max(...parts.map((p) => p.length)) + RATE;
  const audio = new Float32Array(len);
  for (const p of parts)
    mixInto(audio, scaleTo(Float32Array.from(p), 10 ** ((-32 + 12 * r()) / 20)), Math.floor(r() * RATE));
  return { audio, label: 'babble' };
}

/**
 * Negative audio up to `seconds`: sentences, babble, noise and silence, in those proportions. With `nearMissOf`
 * (training), a quarter of the sentences are near misses of that phrase.
 */
export async function negativeCorpus(
  seconds: number,
  seed: number,
  pool: VoicePool,
  onClip?: (done: number, total: number) => void,
  nearMissOf?: string,
): Promise<Clip[]> {
  const r = rng(seed);
  const clips: Clip[] = [];
  let total = 0;
  const sentence = () =>
    nearMissOf !== undefined && r() < 0.25 ? nearMiss(r, nearMissOf) : randomSentence(r);
  while (total < seconds * RATE) {
    const u = r();
    const clip =
      u < 0.6
        ? await speechClip(sentence(), randomVoice(r, pool), r)
        : u < 0.75
          ? await babbleClip(r, pool)
          : u < 0.95
            ? noiseClip(2 + 6 * r(), r)
            : { audio: new Float32Array(Math.round(2 * RATE)), label: 'silence' };
    clips.push(clip);
    total += clip.audio.length;
    onClip?.(Math.min(total / RATE, seconds), seconds);
  }
  return clips;
}

/** One long stream of clips, for listening tests: what a microphone in a busy room would hear. */
export function joinClips(clips: readonly Clip[]): Float32Array {
  return concat(clips.map((c) => c.audio));
}

/** Speaks `text` in a voice it draws from `r`: the samples and the take's label. */
export type SpeakTake = (text: string, r: () => number) => Promise<{ speech: Float32Array; label: string }>;

/** `count` positives of `phrase` in the voices `speak` draws from, placed after a pause as every positive is. */
export async function spokenPositives(
  speak: SpeakTake,
  phrase: string,
  count: number,
  seed: number,
): Promise<Clip[]> {
  const r = rng(seed);
  const out: Clip[] = [];
  for (let i = 0; i < count; i++) {
    const take = await speak(phraseVariant(phrase, i), r);
    const clip = placeSpeech(take.speech, r, 1.2 + 0.8 * r(), 0.5);
    out.push({ ...clip, label: `positive ${take.label}` });
  }
  return out;
}

/**
 * `seconds` of negatives in the voices `speak` draws from: sentences (a quarter near misses of `phrase`), a fifth
 * noise. The draws from `r` come in one order (clip kind, text, voice, placement), so a recipe's seed gives the
 * same corpus whichever engine speaks.
 */
export async function spokenNegatives(
  speak: SpeakTake,
  phrase: string,
  seconds: number,
  seed: number,
): Promise<Clip[]> {
  const r = rng(seed);
  const out: Clip[] = [];
  let total = 0;
  while (total < seconds * RATE) {
    let clip: Clip;
    if (r() < 0.8) {
      const text = r() < 0.25 ? nearMiss(r, phrase) : randomSentence(r);
      const take = await speak(text, r);
      const placed = placeSpeech(take.speech, r, 0.3 + r(), 0.3);
      clip = { audio: placed.audio, label: `speech ${take.label}: ${text}` };
    } else {
      clip = noiseClip(2 + 4 * r(), r);
    }
    out.push(clip);
    total += clip.audio.length;
  }
  return out;
}
