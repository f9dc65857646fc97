// Public surface of the engine: the agent imports from here only.
import { probeEngineInfo } from './engine-info.js';
import { createAddonLoader, unavailableMessage } from './loader.js';
export { createEngineInfo, probeEngineInfo, } from './engine-info.js';
export { EngineError } from './errors.js';
export { EngineHostClient, HostGeneration, HostSpeech, } from './host/client.js';
export { Llm, LlmGeneration, SPEECH_SAMPLE_RATE, weightFiles, } from './llm.js';
export { addonCandidates, createAddonLoader, ENGINE_HELP, unavailableMessage, } from './loader.js';
export { Module } from './module.js';
/** Whether the MNN engine can be used here, and if not, why (the same reason the loader would throw with). */
export function engineAvailability() {
    return createAddonLoader().availability();
}
/** The one line a skipped engine test or a refused load prints. */
export function engineUnavailableLine(availability = engineAvailability()) {
    return availability.available ? undefined : unavailableMessage(availability.reason);
}
/** The addon, or an EngineError (code ENOENGINE) whose message says what to do. */
export function loadEngineAddon() {
    return createAddonLoader().load();
}
/** MNN version, backends compiled in and usable, CPU features — in this process: loads the addon and MNN here.
 *  The agent uses engineInfo() instead (a child answers), so MNN never runs in the agent's own process. */
export function runtimeInfo() {
    return loadEngineAddon().runtimeInfo();
}
/** The engine's availability and RuntimeInfo as a short-lived engine host reports it (MNN is never loaded in the
 *  caller). Each call spawns a host; createEngineInfo() keeps the answer. */
export function engineInfo(options = {}) {
    return probeEngineInfo(options);
}
//# sourceMappingURL=index.js.map