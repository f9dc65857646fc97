// A wake-word package (task `wake`): openWakeWord's two feature graphs and one or more keyword heads, all `.mnn`.
//
//   melspectrogram.mnn   input [1,N] (16 kHz samples as int16 values) → [1,1,T,32]
//   embedding_model.mnn  input [1,76,32,1] → [1,1,1,96]
//   <keyword>.mnn        input [1,16,96] → [1,1] (score 0..1); any number of them
//   wake.json            optional: per keyword its name, phrase, languages and trigger defaults
//
// Shapes are read from the graphs (models/inspect) and checked here, so a package that would not fit the
// pipeline is refused at import with the shapes it has and the shapes it should have.
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { MnnEdgeError } from '../lib/errors.js';
import { inspectMnnBytes, type MnnTensorInfo } from './inspect/inspect-mnn.js';

export const WAKE_MEL_FILE = 'melspectrogram.mnn';
export const WAKE_EMBEDDING_FILE = 'embedding_model.mnn';
export const WAKE_META_FILE = 'wake.json';

export interface WakeGraphRef {
  path: string;
  input: string;
  output: string;
}

export interface WakeKeywordMeta {
  /** Name detections carry (the head's file stem unless wake.json says otherwise). */
  name: string;
  phrase?: string;
  threshold?: number;
  triggerFrames?: number;
  refractoryMs?: number;
}

export interface WakeHeadRef extends WakeGraphRef, WakeKeywordMeta {}

export interface WakePackageLayout {
  melspectrogram: WakeGraphRef;
  embedding: WakeGraphRef;
  heads: WakeHeadRef[];
  languages: string[];
}

/** Whether a file list looks like a wake package (both feature graphs present). */
export function isWakeLayout(names: Iterable<string>): boolean {
  const set = new Set(names);
  return set.has(WAKE_MEL_FILE) && set.has(WAKE_EMBEDDING_FILE);
}

type Expected = Array<number | 'any'>;

function fmt(shape: readonly (number | 'any')[] | undefined): string {
  return shape ? `[${shape.map((d) => (d === 'any' || d < 0 ? '?' : d)).join(',')}]` : '[not recorded]';
}

/** A recorded shape fits when its rank matches and every fixed dimension agrees (-1 stands for any). */
function fits(shape: number[] | undefined, expected: Expected): boolean {
  if (shape === undefined) return true;
  if (shape.length !== expected.length) return false;
  return shape.every((d, i) => d < 0 || expected[i] === 'any' || expected[i] === d);
}

function graph(dir: string, file: string, role: string, input: Expected, output: Expected): WakeGraphRef {
  const path = join(dir, file);
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new MnnEdgeError('EMANIFEST', `Wake package: cannot read ${file}: ${(err as Error).message}`);
  }
  const info = inspectMnnBytes(bytes, file, `${file}.weight`);
  const bad = (what: string, have: string) =>
    new MnnEdgeError(
      'EMANIFEST',
      `Wake package: ${file} (${role}) has ${what} ${have}; the pipeline needs input ${fmt(input)} and output ${fmt(output)}`,
    );
  if (info.inputs.length !== 1)
    throw bad(
      `${info.inputs.length} inputs`,
      info.inputs.map((i: MnnTensorInfo) => `${i.name} ${fmt(i.shape)}`).join(', '),
    );
  if (info.outputs.length !== 1)
    throw bad(
      `${info.outputs.length} outputs`,
      info.outputs.map((o) => `${o.name} ${fmt(o.shape)}`).join(', '),
    );
  const [i] = info.inputs;
  const [o] = info.outputs;
  if (!fits(i!.shape, input)) throw bad(`input ${i!.name}`, fmt(i!.shape));
  if (!fits(o!.shape, output)) throw bad(`output ${o!.name}`, fmt(o!.shape));
  return { path, input: i!.name, output: o!.name };
}

function readMeta(
  dir: string,
  names: Set<string>,
): { keywords: WakeKeywordMeta[]; files: Map<string, string>; languages: string[] } {
  const files = new Map<string, string>();
  if (!names.has(WAKE_META_FILE)) return { keywords: [], files, languages: ['en'] };
  let meta: unknown;
  try {
    meta = JSON.parse(readFileSync(join(dir, WAKE_META_FILE), 'utf8'));
  } catch (err) {
    throw new MnnEdgeError(
      'EMANIFEST',
      `Wake package: ${WAKE_META_FILE} is not valid JSON (${(err as Error).message})`,
    );
  }
  const m = meta as { keywords?: unknown; languages?: unknown };
  if (!Array.isArray(m.keywords))
    throw new MnnEdgeError(
      'EMANIFEST',
      `Wake package: ${WAKE_META_FILE} needs "keywords": [{ "file", "name", … }]`,
    );
  const keywords: WakeKeywordMeta[] = [];
  for (const [n, k] of m.keywords.entries()) {
    const e = k as Record<string, unknown>;
    if (typeof e['file'] !== 'string' || !names.has(e['file']) || !e['file'].endsWith('.mnn'))
      throw new MnnEdgeError(
        'EMANIFEST',
        `Wake package: ${WAKE_META_FILE} keywords[${n}].file must name a .mnn file of the package`,
      );
    const name =
      typeof e['name'] === 'string' && e['name'].length > 0 ? e['name'] : basename(e['file'], '.mnn');
    const num = (key: string, lo: number, hi: number): number | undefined => {
      const v = e[key];
      if (v === undefined) return undefined;
      if (typeof v !== 'number' || !(v >= lo && v <= hi))
        throw new MnnEdgeError(
          'EMANIFEST',
          `Wake package: ${WAKE_META_FILE} keywords[${n}].${key} must be a number in [${lo}, ${hi}]`,
        );
      return v;
    };
    files.set(e['file'], name);
    const threshold = num('threshold', 0, 1);
    const triggerFrames = num('triggerFrames', 1, 50);
    const refractoryMs = num('refractoryMs', 0, 60000);
    keywords.push({
      name,
      ...(typeof e['phrase'] === 'string' ? { phrase: e['phrase'] } : {}),
      ...(threshold !== undefined ? { threshold } : {}),
      ...(triggerFrames !== undefined ? { triggerFrames } : {}),
      ...(refractoryMs !== undefined ? { refractoryMs } : {}),
    });
  }
  const languages = Array.isArray(m.languages)
    ? m.languages.filter((l): l is string => typeof l === 'string')
    : ['en'];
  return { keywords, files, languages };
}

/** The two feature graphs of a directory holding melspectrogram.mnn and embedding_model.mnn, checked. */
export function wakeFeatureGraphs(dir: string): { melspectrogram: WakeGraphRef; embedding: WakeGraphRef } {
  return {
    melspectrogram: graph(dir, WAKE_MEL_FILE, 'melspectrogram', ['any', 'any'], ['any', 1, 'any', 32]),
    embedding: graph(dir, WAKE_EMBEDDING_FILE, 'embedding', ['any', 76, 32, 1], ['any', 1, 1, 96]),
  };
}

/** One keyword head, checked: input [1,16,96], output [1,1]. */
export function wakeHeadGraph(dir: string, file: string, name: string): WakeGraphRef {
  return graph(dir, file, `keyword head ${name}`, ['any', 16, 96], ['any', 1]);
}

/**
 * Reads and checks a wake package directory: both feature graphs and every keyword head, with their tensor
 * names. Throws EMANIFEST naming the graph, the shape it has and the shape the pipeline needs.
 */
export function readWakePackage(dir: string, fileNames: readonly string[]): WakePackageLayout {
  const names = new Set(fileNames);
  if (!isWakeLayout(names))
    throw new MnnEdgeError(
      'EMANIFEST',
      `Wake package: ${dir} needs ${WAKE_MEL_FILE} and ${WAKE_EMBEDDING_FILE} beside its keyword heads`,
    );
  const meta = readMeta(dir, names);
  const { melspectrogram, embedding } = wakeFeatureGraphs(dir);
  const headFiles =
    meta.files.size > 0
      ? [...meta.files.keys()]
      : fileNames
          .filter(
            (n) => n.endsWith('.mnn') && n !== WAKE_MEL_FILE && n !== WAKE_EMBEDDING_FILE && !n.includes('/'),
          )
          .sort();
  if (headFiles.length === 0)
    throw new MnnEdgeError(
      'EMANIFEST',
      `Wake package: ${dir} has no keyword head (.mnn besides the two feature graphs)`,
    );
  const heads = headFiles.map((file) => {
    const name = meta.files.get(file) ?? basename(file, '.mnn');
    const ref = wakeHeadGraph(dir, file, name);
    return { ...ref, ...(meta.keywords.find((k) => k.name === name) ?? {}), name };
  });
  return { melspectrogram, embedding, heads, languages: meta.languages };
}
