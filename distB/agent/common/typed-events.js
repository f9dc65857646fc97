import { EventEmitter } from 'node:events';
export class TypedEventEmitter {
    #ee = new EventEmitter();
    constructor() {
        this.#ee.setMaxListeners(100);
    }
    on(event, listener) {
        this.#ee.on(event, listener);
        return () => this.#ee.off(event, listener);
    }
    once(event, listener) {
        this.#ee.once(event, listener);
    }
    off(event, listener) {
        this.#ee.off(event, listener);
    }
    emit(event, payload) {
        this.#ee.emit(event, payload);
    }
    listenerCount(event) {
        return this.#ee.listenerCount(event);
    }
}
//# sourceMappingURL=typed-events.js.map