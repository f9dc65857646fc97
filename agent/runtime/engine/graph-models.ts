import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { WakeFiles } from '../../../engine/index.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import { readWakePackage } from '../../../models/wake-package.js';
import type { ModelKind } from '../../plan/types.js';
import type { TensorIn } from './engine-port.js';

// Graph models: those that load as an MnnGraph (MNN's Express::Module; "module" in this project means an
// agent feature) rather than an LLM: what their graph takes and gives (the manifest
// does not say, and Silero's control flow needs the names), and the one forward that proves a loaded instance
// works before it takes traffic.

export interface GraphModelProfile {
  inputs: string[];
  outputs: string[];
  warmUp(): TensorIn[];
}

/** Silero VAD v5: 64 samples of context + 512 new ones, a [2,1,128] recurrent state, the sample rate. */
export const SILERO_VAD_PROFILE: GraphModelProfile = {
  inputs: ['input', 'state', 'sr'],
  outputs: ['output', 'stateN'],
  warmUp: () => [
    { data: new Float32Array(576), shape: [1, 576] },
    { data: new Float32Array(256), shape: [2, 1, 128] },
    { data: new Int32Array([16000]), shape: [] },
  ],
};

/** A wake-word package (openWakeWord's pipeline in one host): one 80 ms frame and a fresh stream's empty state;
 *  the names are the pipeline's own (engine/src/wake.ts), its graphs' come from the package (models/wake-package). */
export const WAKE_PROFILE: GraphModelProfile = {
  inputs: ['audio', 'tail', 'mel', 'embeddings'],
  outputs: ['scores', 'tail', 'mel', 'embeddings'],
  warmUp: () => [
    { data: new Float32Array(1280), shape: [1, 1280] },
    { data: new Float32Array(0), shape: [0] },
    { data: new Float32Array(0), shape: [0] },
    { data: new Float32Array(0), shape: [0] },
  ],
};

/** The profile for a catalog kind, or undefined when the kind loads as an LLM. */
export function graphProfileOf(kind: ModelKind | undefined): GraphModelProfile | undefined {
  return kind === 'vad' ? SILERO_VAD_PROFILE : kind === 'wake' ? WAKE_PROFILE : undefined;
}

/** The file names of a model package directory, or an ENOENT error naming it. */
function modelDirEntries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    throw new MnnEdgeError('ENOENT', `Cannot read the model directory ${dir}: ${(err as Error).message}`);
  }
}

/**
 * A graph package has no config.json: its graph is the one `.mnn` file in the package directory (the catalog
 * names `<dir>/config.json` for every model, as the LLM engine wants).
 */
export function graphFilePath(configPath: string): string {
  const dir = dirname(configPath);
  const names = modelDirEntries(dir);
  const graphs = names.filter((n) => n.endsWith('.mnn')).sort();
  if (graphs.length !== 1)
    throw new MnnEdgeError(
      'EMANIFEST',
      `Expected exactly one .mnn graph in ${dir} for a graph model, found ${graphs.length === 0 ? 'none' : graphs.join(', ')}`,
    );
  return join(dir, graphs[0]!);
}

/** The graphs of a wake package (the directory of its catalog config path), checked as at import. */
export function wakeFilesOf(configPath: string): WakeFiles {
  const dir = dirname(configPath);
  const names = modelDirEntries(dir);
  const layout = readWakePackage(dir, names);
  return {
    melspectrogram: layout.melspectrogram,
    embedding: layout.embedding,
    heads: layout.heads.map((h) => ({ name: h.name, path: h.path, input: h.input, output: h.output })),
  };
}
