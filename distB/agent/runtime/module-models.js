import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { MnnEdgeError } from '../common/errors.js';
/** Silero VAD v5: 64 samples of context + 512 new ones, a [2,1,128] recurrent state, the sample rate. */
export const SILERO_VAD_PROFILE = {
    inputs: ['input', 'state', 'sr'],
    outputs: ['output', 'stateN'],
    warmUp: () => [
        { data: new Float32Array(576), shape: [1, 576] },
        { data: new Float32Array(256), shape: [2, 1, 128] },
        { data: new Int32Array([16000]), shape: [] },
    ],
};
/** The profile for a catalog kind, or undefined when the kind loads as an LLM. */
export function moduleProfileOf(kind) {
    return kind === 'vad' ? SILERO_VAD_PROFILE : undefined;
}
/**
 * A Module package has no config.json: its graph is the one `.mnn` file in the package directory (the catalog
 * names `<dir>/config.json` for every model, as the LLM engine wants).
 */
export function moduleGraphPath(configPath) {
    const dir = dirname(configPath);
    let names;
    try {
        names = readdirSync(dir);
    }
    catch (err) {
        throw new MnnEdgeError('ENOENT', `Cannot read the model directory ${dir}: ${err.message}`);
    }
    const graphs = names.filter((n) => n.endsWith('.mnn')).sort();
    if (graphs.length !== 1)
        throw new MnnEdgeError('EMANIFEST', `Expected exactly one .mnn graph in ${dir} for a module model, found ${graphs.length === 0 ? 'none' : graphs.join(', ')}`);
    return join(dir, graphs[0]);
}
//# sourceMappingURL=module-models.js.map