// The planner's vocabulary. These are the planner's own ports: the detect, models and bench modules are adapted
// to them at the composition root, so the planner stays pure and is tested with plain values.
export const SLOT_NAMES = [
    'voice.vad',
    'voice.asr',
    'voice.llm',
    'voice.tts',
    'voice.omni',
    'vision.vlm',
];
export function isSlotName(value) {
    return typeof value === 'string' && SLOT_NAMES.includes(value);
}
/** MNN's LLM-engine `backend_type` strings (transformers/llm/engine: cpu, metal, cuda, opencl, vulkan, hexagon,
 *  npu — QNN builds register as npu). */
export const BACKEND_TYPES = ['cpu', 'opencl', 'vulkan', 'cuda', 'metal', 'npu', 'hexagon'];
export const BUILTINS = ['energy-vad'];
export const defaultPlanPolicy = {
    budgetFraction: 0.75,
    reserveBytes: 192 * 1024 * 1024,
    instanceOverheadBytes: 48 * 1024 * 1024,
    precision: 'low',
    memory: 'low',
    staticOrder: ['npu', 'hexagon', 'cuda', 'opencl', 'vulkan', 'metal', 'cpu'],
    maxChain: 3,
};
//# sourceMappingURL=types.js.map