import { homedir } from 'node:os';
import { join } from 'node:path';
export const SYSTEM_CONFIG_PATH = '/etc/mnn-edge/agent.json';
/** Root runs it as a system service (the image); anyone else runs it for themselves on a dev machine. */
export function defaultDataDir(env = process.env, uid = process.getuid?.() ?? 0) {
    if (env['MNN_EDGE_DATA_DIR'])
        return env['MNN_EDGE_DATA_DIR'];
    if (uid === 0)
        return '/var/lib/mnn-edge';
    const xdg = env['XDG_DATA_HOME'];
    return join(xdg && xdg.length > 0 ? xdg : join(homedir(), '.local', 'share'), 'mnn-edge');
}
export function defaultConfig(env = process.env) {
    return {
        tags: [],
        dataDir: defaultDataDir(env),
        root: '/',
        http: {
            bind: '0.0.0.0',
            port: 8080,
            mdns: false,
            maxUploadBytes: 20 * 1024 * 1024,
            maxWsMessageBytes: 1024 * 1024,
            maxSessions: 4,
            sessionTtlS: 7 * 24 * 3600,
        },
        log: { level: 'info' },
        mqtt: { protocolVersion: 'auto', embeddedBroker: { enabled: true, port: 1883, host: '127.0.0.1' } },
    };
}
//# sourceMappingURL=defaults.js.map