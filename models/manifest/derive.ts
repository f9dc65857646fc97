import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MnnEdgeError } from '../../lib/errors.js';
import { inspectMnnBytes } from '../inspect/inspect-mnn.js';
import { isWakeLayout } from '../wake-package.js';
import { parseManifest } from './schema.js';
import {
  type EngineFeature,
  MODEL_TASKS,
  type ModelManifest,
  type ModelTask,
  type VariantPrecision,
} from './types.js';

// A bare MNN export directory (what llmexport.py or MNNConvert leave behind) carries no manifest. We derive
// one from MNN's own config files and graphs, record every guess in `derived.assumptions`, and mark it derived
// so nobody mistakes it for a publisher's statement.

export interface DeriveOptions {
  id: string;
  version?: string;
  task?: ModelTask;
  /** The path the user named, for messages: the files themselves are read from the store's staging copy. */
  source?: string;
  /** Context length for the KV-cache estimate when llm_config.json names none. */
  contextLength?: number;
}

export interface DerivedFile {
  path: string;
  length: number;
  sha256: string;
}

export async function hashFile(path: string): Promise<{ length: number; sha256: string }> {
  const hash = createHash('sha256');
  let length = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    length += chunk.length;
  }
  return { length, sha256: hash.digest('hex') };
}

function readJson(dir: string, name: string): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, name), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not a JSON object');
    return v as Record<string, unknown>;
  } catch (err) {
    throw new MnnEdgeError(
      'EMANIFEST',
      `Cannot derive a manifest: ${name} is not valid JSON (${(err as Error).message})`,
    );
  }
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

/** MNN's `precision` config: "low" lets backends compute in fp16 (or bf16); "normal" and "high" keep fp32. */
function precisionOf(
  quantBits: Record<string, number>,
  quantBlocks: Record<string, number>,
  configPrecision: string | undefined,
): VariantPrecision {
  const activations = configPrecision === 'low' ? 'fp16' : 'fp32';
  const bits = Object.keys(quantBits)
    .filter((b) => b !== 'other')
    .map(Number)
    .sort((a, b) => a - b)[0];
  if (bits === undefined) return { weights: 'fp32', activations };
  const block = Object.entries(quantBlocks).sort((a, b) => b[1] - a[1])[0]?.[0];
  return {
    weights: `int${bits}`,
    activations,
    ...(block !== undefined ? { quantBlock: Number(block) } : {}),
    label: `W${bits}A${activations.slice(2)}`,
  };
}

/** The files of an export directory are listed by the caller (already checked to stay inside it). */
export function deriveManifest(dir: string, files: DerivedFile[], options: DeriveOptions): ModelManifest {
  const names = new Set(files.map((f) => f.path));
  const assumptions: string[] = [];
  const config = names.has('config.json') ? readJson(dir, 'config.json') : undefined;
  const llmConfig = names.has('llm_config.json') ? readJson(dir, 'llm_config.json') : undefined;
  const features = new Set<EngineFeature>();
  let task = options.task;
  const graphFile = str(config?.['llm_model']) ?? (names.has('llm.mnn') ? 'llm.mnn' : undefined);
  let inferred: ModelTask | undefined;
  if (graphFile !== undefined && names.has(graphFile)) {
    features.add('llm');
    inferred = 'llm';
    if (llmConfig?.['is_visual'] === true || names.has(str(config?.['visual_model']) ?? 'visual.mnn')) {
      features.add('vision');
      features.add('omni');
      inferred = 'vlm';
    }
    if (llmConfig?.['is_audio'] === true || names.has(str(config?.['audio_model']) ?? 'audio.mnn')) {
      features.add('audio');
      features.add('omni');
      inferred = 'omni';
    }
    // A talker makes it a speech-out model first: the workloads give the tts slot's stage to such a model.
    if (llmConfig?.['has_talker'] === true) {
      features.add('omni');
      inferred = 'tts';
    }
  } else {
    const graphs = [...names].filter((n) => n.endsWith('.mnn'));
    if (graphs.length === 0)
      throw new MnnEdgeError(
        'EMANIFEST',
        `Cannot derive a manifest for ${options.source ?? dir}: it has no .mnn file and no mnn-edge.json`,
      );
    if (isWakeLayout(names)) inferred = 'wake';
    else if (graphs.some((g) => /(^|\/)[^/]*vad[^/]*\.mnn$/i.test(g))) inferred = 'vad';
  }
  if (task === undefined) {
    if (inferred === undefined)
      throw new MnnEdgeError(
        'EMANIFEST',
        `Cannot derive the task of ${options.source ?? dir} from its files; pass one of ${MODEL_TASKS.join(', ')}`,
      );
    task = inferred;
    assumptions.push(`task "${task}" inferred from the file layout`);
  }

  const weightBytes = files
    .filter((f) => /\.(mnn|weight|bin)$/.test(f.path))
    .reduce((a, f) => a + f.length, 0);
  const mainGraph = graphFile ?? [...names].find((n) => n.endsWith('.mnn'))!;
  const bytes = readFileSync(join(dir, mainGraph));
  const inspection = inspectMnnBytes(bytes, mainGraph, `${mainGraph}.weight`);
  const precision = precisionOf(
    inspection.weightQuantBits,
    inspection.weightQuantBlocks,
    str(config?.['precision']),
  );
  if (precision.weights !== 'fp32')
    assumptions.push(`weight precision ${precision.weights} read from ${mainGraph}`);

  const memory: ModelManifest['variants'][number]['memory'] = { weightsBytes: weightBytes };
  const hidden = num(llmConfig?.['hidden_size']);
  const layers = num(llmConfig?.['layer_nums']);
  if (hidden !== undefined && layers !== undefined) {
    const context = num(llmConfig?.['max_position_embeddings']) ?? options.contextLength ?? 2048;
    // K and V per layer at fp16 for the full hidden width: an upper bound, since grouped-query attention stores
    // fewer KV heads than llm_config.json tells us about.
    memory.kvCacheBytes = 2 * layers * hidden * context * 2;
    memory.contextLength = context;
    assumptions.push(
      `KV cache estimated as fp16 K+V over the full hidden size at context ${context} (upper bound)`,
    );
  }
  const backend = str(config?.['backend_type']) ?? 'cpu';
  if (backend !== 'cpu') assumptions.push(`backend "${backend}" taken from config.json`);
  const manifest = {
    schemaVersion: 1 as const,
    id: options.id,
    version: options.version ?? '0.0.0',
    task,
    ...(str(llmConfig?.['model_type']) !== undefined ? { family: str(llmConfig?.['model_type'])! } : {}),
    derived: { from: 'mnn-export' as const, assumptions },
    variants: [
      {
        name: `${backend}-${precision.weights}`,
        requirements: {
          backend: backend as 'cpu',
          ...(features.size > 0 ? { engineFeatures: [...features].sort() } : {}),
        },
        precision,
        files: [...files].sort((a, b) => (a.path < b.path ? -1 : 1)),
        memory,
      },
    ],
  };
  if (options.version === undefined) assumptions.push('version 0.0.0: the export names none');
  return parseManifest(manifest, `derived from ${options.source ?? dir}`);
}
