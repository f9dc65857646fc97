// The model package manifest (`mnn-edge.json`): what a package is, and for each variant what it needs to run.
// The JSON schema in schema.ts describes the same shape; docs/schemas/model-package.schema.json is exported from it.
export const MANIFEST_FILE = 'mnn-edge.json';
export const MANIFEST_SCHEMA_VERSION = 1;
export const MODEL_TASKS = ['llm', 'vlm', 'omni', 'asr', 'tts', 'vad', 'vision', 'embedding'];
/** MNN forward types a variant can ask for (MNNForwardType names, lower-case). */
export const MNN_BACKENDS = [
    'cpu',
    'opencl',
    'vulkan',
    'metal',
    'cuda',
    'opengl',
    'nnapi',
    'coreml',
    'qnn',
    'hiai',
    'tensorrt',
    'musa',
    'hexagon',
];
/** Engine features beyond plain inference that libMNN must have been built with. */
export const ENGINE_FEATURES = ['llm', 'omni', 'audio', 'vision'];
export const HUB_NAMES = ['huggingface', 'modelscope'];
//# sourceMappingURL=types.js.map