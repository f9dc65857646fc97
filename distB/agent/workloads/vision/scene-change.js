// Scene change on a small copy of each frame: the mean absolute difference (0–255, over R, G and B) catches
// global changes (lights off), the share of pixels that changed by more than a noise margin catches a small
// object moving. Sensor noise and compression artefacts stay under both.
import { fitFrame } from './image.js';
export const defaultSceneChangeOptions = {
    meanAbsDiff: 3,
    changedFraction: 0.02,
    pixelDelta: 24,
    compareWidth: 160,
};
export function compareFrames(a, b, options) {
    if (a.width !== b.width || a.height !== b.height)
        return { meanAbsDiff: 255, changedFraction: 1, changed: true };
    let sum = 0;
    let changedPixels = 0;
    const pixels = a.width * a.height;
    for (let i = 0; i < pixels; i++) {
        const dr = Math.abs(a.data[i * 3] - b.data[i * 3]);
        const dg = Math.abs(a.data[i * 3 + 1] - b.data[i * 3 + 1]);
        const db = Math.abs(a.data[i * 3 + 2] - b.data[i * 3 + 2]);
        sum += dr + dg + db;
        if (Math.max(dr, dg, db) > options.pixelDelta)
            changedPixels++;
    }
    const meanAbsDiff = sum / (pixels * 3);
    const changedFraction = changedPixels / pixels;
    return {
        meanAbsDiff,
        changedFraction,
        changed: meanAbsDiff >= options.meanAbsDiff || changedFraction >= options.changedFraction,
    };
}
/** Compares each frame with the last one that was reported as a change, so slow drifts add up and trigger too. */
export class SceneChangeDetector {
    #options;
    #reference;
    constructor(options = {}) {
        this.#options = { ...defaultSceneChangeOptions, ...options };
    }
    /** The first frame is a change (there is nothing to compare it with). */
    update(frame) {
        const small = fitFrame(frame, this.#options.compareWidth, this.#options.compareWidth);
        if (!this.#reference) {
            this.#reference = small;
            return { meanAbsDiff: 255, changedFraction: 1, changed: true };
        }
        const diff = compareFrames(this.#reference, small, this.#options);
        if (diff.changed)
            this.#reference = small;
        return diff;
    }
    reset() {
        this.#reference = undefined;
    }
}
//# sourceMappingURL=scene-change.js.map