import { join } from 'node:path';
import type { CatalogVariant as StoreVariant } from '../../models/index.js';
import type { BackendType, CatalogModel, CatalogVariant, ModelKind, PlanCatalog } from './types.js';

// The models store's catalog (one manifest variant per backend build) → the planner's PlanCatalog.

const KINDS: readonly string[] = ['llm', 'vlm', 'omni', 'asr', 'tts', 'vad', 'wake'];

/** A .mnn graph built for the CPU is backend-neutral: MNN's GPU backends run it too, with per-op CPU fallback
 *  inside MNN where they lack an op (Metal is left out: the agent runs on Linux boards). Accelerator builds
 *  (QNN/Hexagon contexts) run only where they were built for. */
const GENERAL: BackendType[] = ['cpu', 'opencl', 'vulkan', 'cuda'];

function backendsFor(required: string): BackendType[] {
  switch (required) {
    case 'cpu':
    case 'opencl':
    case 'vulkan':
    case 'cuda':
      return GENERAL;
    case 'qnn':
    case 'nnapi':
      return ['npu'];
    case 'hexagon':
      return ['hexagon'];
    default:
      return [];
  }
}

export function catalogFromStore(variants: readonly StoreVariant[]): PlanCatalog {
  const models = new Map<string, CatalogModel>();
  for (const v of variants) {
    if (!KINDS.includes(v.task)) continue;
    const backends = backendsFor(v.variant.requirements.backend);
    if (backends.length === 0) continue;
    const key = `${v.ref.id}@${v.ref.version}`;
    let m = models.get(key);
    if (!m) {
      m = { id: v.ref.id, version: v.ref.version, kind: v.task as ModelKind, variants: [] };
      models.set(key, m);
    }
    const mem = v.variant.memory;
    const kvPerToken = mem.kvCacheBytes && mem.contextLength ? mem.kvCacheBytes / mem.contextLength : 0;
    const variant: CatalogVariant = {
      variantId: v.variant.name,
      quant: v.variant.precision.label ?? v.variant.precision.weights,
      weightBytes: mem.weightsBytes,
      kvBytesPerToken: Math.ceil(kvPerToken),
      backends,
      configPath: join(v.dir, 'config.json'),
    };
    if (v.variant.configOverrides) variant.configOverrides = v.variant.configOverrides;
    m.variants.push(variant);
  }
  return { models: [...models.values()] };
}
