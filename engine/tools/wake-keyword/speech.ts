// Synthetic speech and noise for the keyword generator and the wake benchmark: espeak-ng (formant synthesis, no
// model, GPL tool whose output carries no licence) at many voices, speeds and pitches, resampled to 16 kHz, and
// noises made here from a seeded generator, so a corpus is the same bytes on every run.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { resample } from '../../../lib/audio/resample.js';
import { parseWav } from '../../../lib/audio/wav.js';

const run = promisify(execFile);
export const RATE = 16000;

/** Deterministic PRNG (mulberry32): corpora and training are repeatable from their seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function pick<T>(r: () => number, list: readonly T[]): T {
  return list[Math.floor(r() * list.length)]!;
}

/** Standard normal from two uniforms (Box–Muller). */
export function gauss(r: () => number): number {
  return Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());
}

export interface Voice {
  /** espeak-ng voice argument, e.g. `en-us+f3`. */
  name: string;
  speed: number;
  pitch: number;
  /** espeak-ng's `--path` for made-up variants (timbres.ts); the system's data without it. */
  dataPath?: string;
}

/** English accents espeak-ng ships without mbrola. */
export const ACCENTS = [
  'en-us',
  'en',
  'en-gb-x-rp',
  'en-gb-scotland',
  'en-029',
  'en-us-nyc',
  'en-gb-x-gbclan',
  'en-gb-x-gbcwmd',
] as const;

const VARIANT_DIRS = [
  '/usr/lib/x86_64-linux-gnu/espeak-ng-data/voices/!v',
  '/usr/lib/aarch64-linux-gnu/espeak-ng-data/voices/!v',
  '/usr/share/espeak-ng-data/voices/!v',
];

/** The directory of espeak-ng's stock voice variants, or undefined. */
export function variantDir(): string | undefined {
  return VARIANT_DIRS.find((dir) => existsSync(dir));
}

/** espeak-ng's voice variants (timbre: f1…, m1…, klatt…), sorted; names with spaces are left out. */
export function espeakVariants(): string[] {
  const dir = variantDir();
  if (dir) {
    return readdirSync(dir)
      .filter((n) => /^[A-Za-z0-9]+$/.test(n))
      .sort();
  }
  return ['f1', 'f2', 'f3', 'f4', 'f5', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'];
}

export async function espeakMissing(command = 'espeak-ng'): Promise<string | undefined> {
  try {
    await run(command, ['--version']);
    return undefined;
  } catch {
    return `${command} not found (apt install espeak-ng)`;
  }
}

/** `text` in `voice`, as 16 kHz mono float, leading and trailing silence trimmed. */
export async function say(text: string, voice: Voice, command = 'espeak-ng'): Promise<Float32Array> {
  const { stdout } = await run(
    command,
    [
      ...(voice.dataPath ? [`--path=${voice.dataPath}`] : []),
      ...['-v', voice.name, '-s', String(voice.speed), '-p', String(voice.pitch), '--stdout', text],
    ],
    { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
  );
  const wav = parseWav(new Uint8Array(stdout.buffer, stdout.byteOffset, stdout.byteLength));
  return trimSilence(resample(wav.channels[0]!, wav.sampleRate, RATE));
}

/** Drops leading and trailing stretches quieter than -50 dBFS (10 ms blocks), keeping 20 ms either side. */
export function trimSilence(x: Float32Array): Float32Array {
  const block = 160;
  const loud = (i: number) => {
    let s = 0;
    for (let j = i; j < Math.min(x.length, i + block); j++) s += x[j]! * x[j]!;
    return Math.sqrt(s / block) > 0.003;
  };
  let start = 0;
  while (start < x.length && !loud(start)) start += block;
  let end = x.length - block;
  while (end > start && !loud(end)) end -= block;
  if (start >= x.length) return new Float32Array(0);
  return x.slice(Math.max(0, start - 320), Math.min(x.length, end + block + 320));
}

export type NoiseKind = 'white' | 'pink' | 'brown' | 'hum' | 'tones' | 'clicks' | 'chirp';
export const NOISE_KINDS: readonly NoiseKind[] = [
  'white',
  'pink',
  'brown',
  'hum',
  'tones',
  'clicks',
  'chirp',
];

/** `samples` of a noise at RMS `level`. */
export function noise(kind: NoiseKind, samples: number, level: number, r: () => number): Float32Array {
  const out = new Float32Array(samples);
  let b0 = 0;
  let b1 = 0;
  let b2 = 0;
  let brown = 0;
  const f0 = 50 + 10 * Math.floor(r() * 2);
  const notes = [220, 262, 294, 330, 392, 440, 523].map((f) => f * (0.5 + r()));
  let note = pick(r, notes);
  for (let i = 0; i < samples; i++) {
    const w = gauss(r);
    let v = 0;
    switch (kind) {
      case 'white':
        v = w;
        break;
      case 'pink':
        // Paul Kellet's economy filter: close enough to 1/f for a background.
        b0 = 0.99765 * b0 + w * 0.099046;
        b1 = 0.963 * b1 + w * 0.2965164;
        b2 = 0.57 * b2 + w * 1.0526913;
        v = (b0 + b1 + b2 + w * 0.1848) / 3;
        break;
      case 'brown':
        brown = (brown + 0.02 * w) * 0.998;
        v = brown * 5;
        break;
      case 'hum':
        for (let h = 1; h <= 5; h++) v += Math.sin((2 * Math.PI * f0 * h * i) / RATE) / h;
        v += 0.05 * w;
        break;
      case 'tones':
        // A melody of sustained notes with harmonics: music-like.
        if (i % 4000 === 0) note = pick(r, notes);
        for (let h = 1; h <= 3; h++) v += Math.sin((2 * Math.PI * note * h * i) / RATE) / (h * h);
        v *= 0.6 + 0.4 * Math.sin((2 * Math.PI * i) / 4000);
        break;
      case 'clicks':
        v = r() < 0.002 ? gauss(r) * 8 : 0.05 * w;
        break;
      case 'chirp': {
        const t = (i % 8000) / RATE;
        v = Math.sin(2 * Math.PI * (200 + 3000 * t) * t);
        break;
      }
    }
    out[i] = v;
  }
  return scaleTo(out, level);
}

export function rmsOf(x: Float32Array): number {
  let s = 0;
  for (const v of x) s += v * v;
  return Math.sqrt(s / Math.max(1, x.length));
}

export function scaleTo(x: Float32Array, level: number): Float32Array {
  const r = rmsOf(x);
  if (r > 0) for (let i = 0; i < x.length; i++) x[i] = (x[i]! / r) * level;
  return x;
}

/** Adds `b` into `a` from `at`, clipping to [-1, 1]. */
export function mixInto(a: Float32Array, b: Float32Array, at = 0): void {
  for (let i = 0; i < b.length && at + i < a.length; i++)
    a[at + i] = Math.max(-1, Math.min(1, a[at + i]! + b[i]!));
}

export function concat(parts: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
