export const voiceDefaults = {
    enabled: true,
    input: { source: 'none', device: 'default' },
    output: { sink: 'none', device: 'default' },
    mode: 'vad',
    duplex: 'half',
    bargeIn: true,
    bargeInMarginDb: 15,
    bargeInMinSpeechMs: 96,
    vad: { threshold: 0.5, minSpeechMs: 250, hangoverMs: 500, maxUtteranceMs: 20_000, padMs: 30 },
    systemPrompt: 'You are a helpful voice assistant on a small device. Answer briefly, in plain spoken sentences.',
    maxNewTokens: 256,
    maxHistoryMessages: 12,
    espeak: { command: 'espeak-ng', voice: 'en-us', wordsPerMinute: 175 },
    retention: { maxTurns: 1000, maxAgeHours: 72 },
    maxSessions: 2,
};
const str = { type: 'string', minLength: 1 };
const int = (minimum, maximum) => ({
    type: 'integer',
    minimum,
    ...(maximum !== undefined ? { maximum } : {}),
});
export const voiceSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        enabled: { type: 'boolean' },
        input: {
            type: 'object',
            additionalProperties: false,
            properties: { source: { enum: ['none', 'alsa', 'wav'] }, device: str, wavPath: str },
        },
        output: {
            type: 'object',
            additionalProperties: false,
            properties: { sink: { enum: ['none', 'alsa', 'wav'] }, device: str, wavPath: str },
        },
        mode: { enum: ['vad', 'push-to-talk'] },
        duplex: { enum: ['half', 'full'], description: 'half unless the board cancels its own echo' },
        bargeIn: { type: 'boolean' },
        bargeInMarginDb: { type: 'number', minimum: 0, maximum: 60 },
        bargeInMinSpeechMs: int(0, 2000),
        vad: {
            type: 'object',
            additionalProperties: false,
            properties: {
                threshold: { type: 'number', minimum: 0.05, maximum: 0.95 },
                minSpeechMs: int(0, 5000),
                hangoverMs: int(32, 5000),
                maxUtteranceMs: int(1000, 30_000),
                padMs: int(0, 1000),
            },
        },
        systemPrompt: { type: 'string' },
        maxNewTokens: int(1, 8192),
        maxHistoryMessages: int(0, 200),
        espeak: {
            type: 'object',
            additionalProperties: false,
            properties: { command: str, voice: str, wordsPerMinute: int(80, 450) },
        },
        retention: {
            type: 'object',
            additionalProperties: false,
            properties: { maxTurns: int(0), maxAgeHours: int(1) },
        },
        maxSessions: int(1, 64),
    },
};
//# sourceMappingURL=voice.js.map