// One MNN object must never be driven by two threads at once: every call on a model goes through its queue.
// A generation holds the lock from prefill to its last step, so a second generate() waits for the first.
export class SerialQueue {
    #tail = Promise.resolve();
    /** Resolves to a release function once every earlier holder has released. */
    acquire() {
        let release;
        const held = new Promise((r) => {
            release = r;
        });
        const ready = this.#tail.then(() => release);
        this.#tail = this.#tail.then(() => held);
        return ready;
    }
    async run(fn) {
        const release = await this.acquire();
        try {
            return await fn();
        }
        finally {
            release();
        }
    }
    /** Resolves when everything queued so far has finished. */
    idle() {
        return this.#tail;
    }
}
//# sourceMappingURL=serial-queue.js.map