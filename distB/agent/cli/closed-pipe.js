/**
 * `mnn-edge … | head -1`: once the reader has gone, writing to the pipe fails with EPIPE, which Node raises as an
 * unhandled 'error' event (a stack trace) unless someone listens. The reader asked for no more output, so a
 * one-shot command stops quietly; `run` keeps serving, because the HTTP API and the fleet do not depend on who
 * reads its log. Any other stream error is still a real failure and is rethrown.
 */
export function onClosedPipe(streams, whenClosed) {
    let closed = false;
    for (const stream of streams) {
        stream.on('error', (err) => {
            if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED')
                throw err;
            if (closed)
                return;
            closed = true;
            whenClosed();
        });
    }
}
//# sourceMappingURL=closed-pipe.js.map