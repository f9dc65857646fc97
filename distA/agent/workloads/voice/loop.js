export async function runVoiceLoop(session, source, sink) {
    const offAudio = session.on('audio', (e) => sink.write(e.samples, e.sampleRate));
    const offBargeIn = session.on('barge-in', () => sink.flush());
    try {
        for await (const chunk of source)
            if (!session.pushAudio(chunk))
                await session.drained();
        await session.endOfInput();
        await session.idle();
    }
    finally {
        offAudio();
        offBargeIn();
        await sink.close();
    }
}
//# sourceMappingURL=loop.js.map