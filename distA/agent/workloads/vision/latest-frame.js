export class LatestFrame {
    #pending;
    #waiter;
    #closed = false;
    dropped = 0;
    accepted = 0;
    put(frame) {
        if (this.#closed)
            return;
        this.accepted++;
        if (this.#waiter) {
            const w = this.#waiter;
            this.#waiter = undefined;
            w(frame);
            return;
        }
        if (this.#pending)
            this.dropped++;
        this.#pending = frame;
    }
    /** The newest frame, waiting for one if none is pending; undefined once closed. */
    take() {
        if (this.#pending) {
            const f = this.#pending;
            this.#pending = undefined;
            return Promise.resolve(f);
        }
        if (this.#closed)
            return Promise.resolve(undefined);
        return new Promise((resolve) => {
            this.#waiter = resolve;
        });
    }
    /** No more frames will come; the pending one is still taken. */
    end() {
        this.#closed = true;
        if (!this.#pending) {
            this.#waiter?.(undefined);
            this.#waiter = undefined;
        }
    }
    get hasPending() {
        return this.#pending !== undefined;
    }
    /** Stop now: the pending frame is discarded. */
    close() {
        this.#closed = true;
        this.#pending = undefined;
        this.#waiter?.(undefined);
        this.#waiter = undefined;
    }
}
//# sourceMappingURL=latest-frame.js.map