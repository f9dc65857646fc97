import { MnnEdgeError } from '../../lib/errors.js';
import { PACKAGE_PATH_PATTERN } from '../manifest/schema.js';
import type { ModelTask } from '../manifest/types.js';
import type { HubFile, HubSnapshot } from './types.js';

// What a hub listing must be before one byte is fetched: names that stay inside the package, and an MNN
// export (config.json plus .mnn graphs). Also what kind of model it is, from MNN's own export config.

/** How MNN's LLM exports say what they are: a text model, with a vision or audio encoder, or with a talker
 *  (speech output, as Qwen-Omni exports have). */
export type ExportKind = 'text' | 'vision' | 'audio' | 'talker' | 'asr' | 'other';

const PATH_OK = new RegExp(PACKAGE_PATH_PATTERN);

export interface CheckedListing {
  files: HubFile[];
  /** Listed but not fetched: git metadata, names a package cannot carry. */
  skipped: string[];
}

/** Refuses listings with names that could leave the package directory; `..`, absolute paths and the like are
 *  an attack or a broken hub, never something to work around. */
export function checkListing(snapshot: HubSnapshot): CheckedListing {
  const files: HubFile[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>();
  for (const f of snapshot.files) {
    const p = f.path;
    const shown = JSON.stringify(p.slice(0, 200));
    if (p.includes('\0') || p.includes('\\') || p.startsWith('/') || /^[A-Za-z]:/.test(p))
      throw new MnnEdgeError(
        'EHUBFILENAME',
        `The hub lists a file with an absolute or unsafe path: ${shown}; refused`,
        { path: p },
      );
    if (p.split('/').some((s) => s === '..' || s === '.' || s === ''))
      throw new MnnEdgeError(
        'EHUBFILENAME',
        `The hub lists a file whose path leaves the package (..): ${shown}; refused`,
        { path: p },
      );
    if (!Number.isSafeInteger(f.size) || f.size < 0)
      throw new MnnEdgeError('EHUBRESPONSE', `The hub lists ${shown} with an impossible size ${f.size}`);
    if (seen.has(p)) throw new MnnEdgeError('EHUBRESPONSE', `The hub lists ${shown} twice`);
    seen.add(p);
    const base = p.split('/').at(-1)!;
    if (base.startsWith('.git') || p === 'mnn-edge.json' || !PATH_OK.test(p)) {
      skipped.push(p);
      continue;
    }
    files.push(f);
  }
  return { files, skipped };
}

export function requireMnnExport(snapshot: HubSnapshot, files: readonly HubFile[]): void {
  const names = new Set(files.map((f) => f.path));
  const missing: string[] = [];
  if (!names.has('config.json')) missing.push('config.json');
  if (![...names].some((n) => n.endsWith('.mnn'))) missing.push('.mnn graph');
  if (missing.length === 0) return;
  const has = [...names].slice(0, 8).join(', ') || 'no files';
  throw new MnnEdgeError(
    'EHUBNOTMNN',
    `${snapshot.ref.owner}/${snapshot.ref.name}@${snapshot.commit.slice(0, 12)} is not an MNN export: it has no ${missing.join(' and no ')} (it has ${has}${names.size > 8 ? ', …' : ''})`,
    { missing },
  );
}

function obj(buf: Buffer | undefined): Record<string, unknown> | undefined {
  if (buf === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(buf.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export interface ExportDescription {
  kind: ExportKind;
  task: ModelTask | undefined;
  /** "int4", "int8", "fp16" … when the config or the name says. */
  quant?: string;
  hiddenSize?: number;
  layers?: number;
  contextLength?: number;
  /** The backend the export was built for (config.json backend_type), e.g. qnn for an NPU build. */
  backend: string;
  /** Bytes of graphs and weights, for memory estimates before anything is fetched. */
  weightBytes: number;
}

const KIND_TASK: Record<ExportKind, ModelTask | undefined> = {
  text: 'llm',
  vision: 'vlm',
  audio: 'omni',
  talker: 'omni',
  asr: 'asr',
  other: undefined,
};

export function describeExport(
  repo: string,
  files: readonly HubFile[],
  configJson: Buffer | undefined,
  llmConfigJson: Buffer | undefined,
): ExportDescription {
  const config = obj(configJson);
  const llm = obj(llmConfigJson);
  const names = new Set(files.map((f) => f.path));
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const has = (key: string, file: string) => str(config?.[key]) !== undefined || names.has(file);
  let kind: ExportKind;
  if (has('talker_model', 'talker.mnn') || llm?.['has_talker'] === true) kind = 'talker';
  else if (has('audio_model', 'audio.mnn') || llm?.['is_audio'] === true) kind = 'audio';
  else if (has('visual_model', 'visual.mnn') || llm?.['is_visual'] === true) kind = 'vision';
  else if (has('llm_model', 'llm.mnn')) kind = 'text';
  else if (/asr|sensevoice|whisper|paraformer/i.test(repo)) kind = 'asr';
  else kind = 'other';
  const bits = num(config?.['quant_bit']) ?? num(llm?.['quant_bit']);
  const named = /(?:^|[-_.])(int4|int8|fp16|bf16|fp32|q4|q8|4bit|8bit)(?:$|[-_.])/i
    .exec(repo)?.[1]
    ?.toLowerCase();
  const quant =
    bits !== undefined
      ? `int${bits}`
      : named === undefined
        ? undefined
        : (({ q4: 'int4', '4bit': 'int4', q8: 'int8', '8bit': 'int8' } as Record<string, string>)[named] ??
          named);
  const hidden = num(llm?.['hidden_size']);
  const layers = num(llm?.['layer_nums']);
  const context = num(llm?.['max_position_embeddings']);
  return {
    kind,
    task: KIND_TASK[kind],
    ...(quant !== undefined ? { quant } : {}),
    ...(hidden !== undefined ? { hiddenSize: hidden } : {}),
    ...(layers !== undefined ? { layers } : {}),
    ...(context !== undefined ? { contextLength: context } : {}),
    backend: str(config?.['backend_type']) ?? 'cpu',
    weightBytes: files.filter((f) => /\.(mnn|weight|bin)$/.test(f.path)).reduce((a, f) => a + f.size, 0),
  };
}
