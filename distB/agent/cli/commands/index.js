const entry = (name, summary, load) => ({
    name,
    summary,
    load: async () => (await load()).command,
});
export const commandEntries = [
    entry('run', 'run the agent (HTTP server, auth, and every module) until SIGTERM/SIGINT', () => import('./run.js')),
    entry('detect', 'describe this board: SoC, CPU features, accelerators, usable MNN backends', () => import('./detect.js')),
    entry('models', 'list, import, pull, inspect and garbage-collect model packages', () => import('./models.js')),
    entry('bench', 'measure models on this board (bench models) and show the placement the numbers give', () => import('./bench.js')),
    entry('fleet', 'operate a fleet over MQTT: list devices, send commands, watch telemetry', () => import('./fleet.js')),
    entry('ota', 'sign, pack, publish and roll out model packages (operator tools)', () => import('./ota.js')),
    entry('token', 'print the pairing token for the dashboard login and API clients', () => import('./token.js')),
    entry('config', 'print the effective configuration, check it, or print its JSON schema', () => import('./config.js')),
    entry('engine', 'build MNN for this board and the engine addon against it (boards without a Yocto image)', () => import('./engine.js')),
    entry('version', 'print the agent version', () => import('./version.js')),
];
/** Every command loaded: for tests that check each one's usage and summary. */
export async function loadCommands() {
    return Promise.all(commandEntries.map((e) => e.load()));
}
//# sourceMappingURL=index.js.map