export const visionDefaults = {
    enabled: true,
    frameWidth: 448,
    frameHeight: 448,
    maxNewTokens: 128,
    watch: {
        enabled: false,
        prompt: 'Describe what changed in the scene in one sentence.',
        intervalS: 30,
        onSceneChange: true,
        meanAbsDiff: 3,
        changedFraction: 0.02,
        thumbnailWidth: 160,
    },
    maxFrameBytes: 8 * 1024 * 1024,
    concurrency: 1,
    maxQueued: 4,
    retryAfterS: 2,
    yieldToVoice: true,
};
const int = (minimum, maximum) => ({
    type: 'integer',
    minimum,
    ...(maximum !== undefined ? { maximum } : {}),
});
export const visionSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        enabled: { type: 'boolean' },
        camera: { type: 'string', minLength: 1 },
        frameWidth: int(16, 4096),
        frameHeight: int(16, 4096),
        maxNewTokens: int(1, 8192),
        watch: {
            type: 'object',
            additionalProperties: false,
            properties: {
                enabled: { type: 'boolean' },
                prompt: { type: 'string', minLength: 1 },
                intervalS: { type: 'number', minimum: 0 },
                onSceneChange: { type: 'boolean' },
                meanAbsDiff: { type: 'number', minimum: 0, maximum: 255 },
                changedFraction: { type: 'number', minimum: 0, maximum: 1 },
                thumbnailWidth: int(16, 1024),
            },
        },
        maxFrameBytes: int(1024),
        concurrency: int(1, 16),
        maxQueued: int(0, 1000),
        retryAfterS: int(1, 3600),
        yieldToVoice: { type: 'boolean' },
    },
};
//# sourceMappingURL=vision.js.map