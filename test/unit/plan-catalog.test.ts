import test from 'ava';
import { catalogFromStore } from '../../agent/plan/from-catalog.js';
import type { CatalogVariant as StoreVariant } from '../../models/index.js';

function variant(
  id: string,
  version: string,
  task: StoreVariant['task'],
  name: string,
  backend: string,
  extra: Partial<StoreVariant['variant']> = {},
): StoreVariant {
  return {
    ref: { id, version },
    task,
    dir: `/data/models/${id}/${version}`,
    inUse: false,
    variant: {
      name,
      requirements: { backend: backend as StoreVariant['variant']['requirements']['backend'] },
      precision: { weights: 'int4', activations: 'fp16', label: 'W4A16' },
      files: [],
      memory: { weightsBytes: 1000, kvCacheBytes: 2048 * 64, contextLength: 2048 },
      ...extra,
    },
  };
}

test('store variants become planner models: CPU builds run on any general backend, QNN builds on the NPU', (t) => {
  const cat = catalogFromStore([
    variant('qwen', '1.0.0', 'llm', 'cpu-w4', 'cpu', { configOverrides: { attention_mode: 8 } }),
    variant('qwen', '1.0.0', 'llm', 'qnn-v75', 'qnn'),
    variant('qwen', '0.9.0', 'llm', 'cpu-w4', 'cpu'),
    variant('yolo', '1.0.0', 'vision', 'cpu', 'cpu'),
    variant('odd', '1.0.0', 'llm', 'coreml', 'coreml'),
  ]);
  t.deepEqual(cat.models, [
    {
      id: 'qwen',
      version: '1.0.0',
      kind: 'llm',
      variants: [
        {
          variantId: 'cpu-w4',
          quant: 'W4A16',
          weightBytes: 1000,
          kvBytesPerToken: 64,
          backends: ['cpu', 'opencl', 'vulkan', 'cuda'],
          configPath: '/data/models/qwen/1.0.0/config.json',
          configOverrides: { attention_mode: 8 },
        },
        {
          variantId: 'qnn-v75',
          quant: 'W4A16',
          weightBytes: 1000,
          kvBytesPerToken: 64,
          backends: ['npu'],
          configPath: '/data/models/qwen/1.0.0/config.json',
        },
      ],
    },
    {
      id: 'qwen',
      version: '0.9.0',
      kind: 'llm',
      variants: [
        {
          variantId: 'cpu-w4',
          quant: 'W4A16',
          weightBytes: 1000,
          kvBytesPerToken: 64,
          backends: ['cpu', 'opencl', 'vulkan', 'cuda'],
          configPath: '/data/models/qwen/0.9.0/config.json',
        },
      ],
    },
  ]);
});
