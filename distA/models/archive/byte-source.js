// Exact-size reads over an async stream of chunks, so a parser can ask for "512 bytes" without caring how the
// stream was cut. Memory stays bounded by one chunk plus the request.
export class ByteSource {
    #chunks;
    #pending = Buffer.alloc(0);
    #ended = false;
    /** Bytes handed out so far: the archive offset, for error messages. */
    position = 0;
    constructor(chunks) {
        this.#chunks = chunks[Symbol.asyncIterator]();
    }
    async #fill(min) {
        while (this.#pending.length < min && !this.#ended) {
            const next = await this.#chunks.next();
            if (next.done)
                this.#ended = true;
            else if (next.value.length > 0)
                this.#pending =
                    this.#pending.length === 0 ? Buffer.from(next.value) : Buffer.concat([this.#pending, next.value]);
        }
    }
    /** Exactly n bytes, or fewer only when the stream ended first. */
    async read(n) {
        await this.#fill(n);
        const out = this.#pending.subarray(0, n);
        this.#pending = this.#pending.subarray(out.length);
        this.position += out.length;
        return out;
    }
    /** Up to max bytes, whatever is at hand (at least one unless the stream ended). */
    async readSome(max) {
        await this.#fill(1);
        const out = this.#pending.subarray(0, max);
        this.#pending = this.#pending.subarray(out.length);
        this.position += out.length;
        return out;
    }
    /** Release the underlying stream early (a rejected archive need not be read to its end). */
    async close() {
        await this.#chunks.return?.();
    }
}
//# sourceMappingURL=byte-source.js.map