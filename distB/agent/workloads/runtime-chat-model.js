import { EngineFailure } from '../runtime/engine-port.js';
export function runtimeChatModel(runtime, slot, options) {
    const talker = options.capabilities.talker
        ? {
            speak: (o) => runtime.speak(slot, { text: o.text }, o.signal),
        }
        : {};
    return {
        id: options.id ?? slot,
        capabilities: { ...options.capabilities },
        ...talker,
        generate(request) {
            let settle;
            let fail;
            const result = new Promise((resolve, reject) => {
                settle = resolve;
                fail = reject;
            });
            // The error also surfaces through iteration; an unobserved `result` must not crash the process.
            result.catch(() => { });
            let iterated = false;
            return {
                result,
                async *[Symbol.asyncIterator]() {
                    if (iterated)
                        throw new Error('a chat stream can be iterated only once');
                    iterated = true;
                    let text = '';
                    let settled = false;
                    const finish = (r) => {
                        settled = true;
                        settle({ text, ...r });
                    };
                    const empty = { promptTokens: 0, generatedTokens: 0, prefillMs: 0, decodeMs: 0 };
                    try {
                        const events = runtime.stream(slot, {
                            prompt: request.messages,
                            ...(request.images?.length ? { images: request.images } : {}),
                            ...(request.audio ? { audios: [{ samples: request.audio, sampleRate: 16000 }] } : {}),
                            ...(request.maxNewTokens !== undefined ? { maxNewTokens: request.maxNewTokens } : {}),
                        }, request.signal);
                        for await (const ev of events) {
                            if (ev.type === 'text') {
                                text += ev.text;
                                yield ev.text;
                            }
                            else {
                                finish({
                                    finishReason: ev.finishReason,
                                    promptTokens: ev.stats.promptTokens,
                                    generatedTokens: ev.stats.decodeTokens,
                                    prefillMs: ev.stats.prefillMs,
                                    decodeMs: ev.stats.decodeMs,
                                });
                            }
                        }
                    }
                    catch (err) {
                        // The caller's own abort is an ending, not an error; everything else (a crash, a drain) is.
                        if (request.signal?.aborted && (!(err instanceof EngineFailure) || err.kind === 'cancelled')) {
                            finish({ finishReason: 'aborted', ...empty });
                            return;
                        }
                        settled = true;
                        fail(err);
                        throw err;
                    }
                    finally {
                        if (!settled)
                            finish({ finishReason: 'aborted', ...empty });
                    }
                },
            };
        },
    };
}
//# sourceMappingURL=runtime-chat-model.js.map