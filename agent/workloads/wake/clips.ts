// The last wake-word detections as WAV clips (voice.wake.clips, off by default: they are recordings of the
// room), so a person can listen to them, mark the false triggers and tune the threshold. Each clip is the 2 s of
// audio up to the frame that detected, 16 kHz mono s16le, with a JSON sidecar (keyword, score, source, the
// person's label); a clip is listed only once its sidecar is written. The store keeps at most `maxCount` clips
// and `maxBytes` of WAV, dropping the oldest first; a clip that cannot be written is reported, never thrown into
// the stream that detected it.
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeWavS16 } from '../../../lib/audio/wav.js';
import { errorMessage } from '../../../lib/errors.js';
import { HttpError } from '../../../lib/http-error.js';
import { floatToS16le, PIPELINE_RATE } from '../audio/pcm.js';

export type ClipLabel = 'false-trigger' | 'correct';
export const CLIP_LABELS: readonly ClipLabel[] = ['false-trigger', 'correct'];

export interface WakeClip {
  id: string;
  /** Wall time of the detection (epoch ms). */
  t: number;
  keyword: string;
  score: number;
  source: string;
  /** Size of the WAV file. */
  bytes: number;
  durationMs: number;
  label?: ClipLabel;
}

export interface ClipLimits {
  maxCount: number;
  maxBytes: number;
}

/** Ids are made here from numbers and a keyword name made file-safe; anything else is refused at the edge. */
const ID = /^[0-9]{1,16}-[0-9]{1,12}-[A-Za-z0-9_.-]{1,64}$/;

export class WakeClipStore {
  readonly dir: string;
  readonly limits: ClipLimits;
  /** Why the last clip could not be saved (disk full, permissions), until one is saved again. */
  lastError: string | undefined;

  constructor(dir: string, limits: ClipLimits) {
    this.dir = dir;
    this.limits = limits;
    mkdirSync(dir, { recursive: true });
    this.#prune();
  }

  /** A detection's audio (16 kHz mono float) as a clip; undefined when it could not be written. */
  save(
    d: { seq: number; t: number; keyword: string; score: number; source: string },
    audio: Float32Array,
  ): WakeClip | undefined {
    const id = `${Math.round(d.t)}-${d.seq}-${d.keyword.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64)}`;
    const wav = encodeWavS16(floatToS16le(audio), PIPELINE_RATE);
    const clip: WakeClip = {
      id,
      t: d.t,
      keyword: d.keyword,
      score: d.score,
      source: d.source,
      bytes: wav.length,
      durationMs: Math.round((audio.length / PIPELINE_RATE) * 1000),
    };
    try {
      writeFileSync(join(this.dir, `${id}.wav`), wav);
      writeFileSync(join(this.dir, `${id}.json`), JSON.stringify(clip));
      this.#prune();
      this.lastError = undefined;
      return clip;
    } catch (err) {
      this.lastError = `The clip of the ${d.keyword} detection was not saved: ${errorMessage(err)}`;
      rmSync(join(this.dir, `${id}.wav`), { force: true });
      return undefined;
    }
  }

  /** Newest first. */
  list(): WakeClip[] {
    return this.#all().reverse();
  }

  wav(id: string): Buffer {
    this.#get(id);
    return readFileSync(join(this.dir, `${id}.wav`));
  }

  /** A person's verdict on a clip (null clears it). */
  mark(id: string, label: ClipLabel | null): WakeClip {
    const { label: _old, ...clip } = this.#get(id);
    const next: WakeClip = label === null ? clip : { ...clip, label };
    writeFileSync(join(this.dir, `${id}.json`), JSON.stringify(next));
    return next;
  }

  remove(id: string): void {
    this.#get(id);
    rmSync(join(this.dir, `${id}.json`), { force: true });
    rmSync(join(this.dir, `${id}.wav`), { force: true });
  }

  #get(id: string): WakeClip {
    if (!ID.test(id)) throw new HttpError(400, 'invalid_parameter', `Not a clip id: ${JSON.stringify(id)}`);
    const clip = this.#read(`${id}.json`);
    if (!clip) throw new HttpError(404, 'not_found', `No wake clip ${id} (the oldest are dropped)`);
    return clip;
  }

  #read(name: string): WakeClip | undefined {
    try {
      return JSON.parse(readFileSync(join(this.dir, name), 'utf8')) as WakeClip;
    } catch {
      return undefined;
    }
  }

  /** Oldest first. */
  #all(): WakeClip[] {
    return names(this.dir)
      .filter((n) => n.endsWith('.json'))
      .flatMap((n) => {
        const clip = this.#read(n);
        return clip && ID.test(clip.id) ? [clip] : [];
      })
      .sort((a, b) => a.t - b.t || a.id.localeCompare(b.id));
  }

  /** Over the count or the bytes: the oldest go. A WAV without its sidecar (a write cut short) goes too. */
  #prune(): void {
    const clips = this.#all();
    const listed = new Set(clips.map((c) => `${c.id}.wav`));
    for (const n of names(this.dir))
      if (n.endsWith('.wav') && !listed.has(n)) rmSync(join(this.dir, n), { force: true });
    let bytes = clips.reduce((n, c) => n + fileSize(join(this.dir, `${c.id}.wav`)), 0);
    while (clips.length > 0 && (clips.length > this.limits.maxCount || bytes > this.limits.maxBytes)) {
      const old = clips.shift()!;
      bytes -= fileSize(join(this.dir, `${old.id}.wav`));
      rmSync(join(this.dir, `${old.id}.json`), { force: true });
      rmSync(join(this.dir, `${old.id}.wav`), { force: true });
    }
  }
}

/** The directory's entries; none when it is gone (removed under the agent: the next save says so). */
function names(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
