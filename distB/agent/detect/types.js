// The capability document: what the board is, with the evidence for every claim. Other modules (plan, fleet,
// dashboard) import these types, so names here are part of the agent's internal contract: extend, don't rename.
export const MNN_BACKENDS = [
    'cpu',
    'opencl',
    'vulkan',
    'cuda',
    'nn',
    'qnn',
    'hexagon',
    'rknn',
];
//# sourceMappingURL=types.js.map