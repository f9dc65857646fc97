import type { Command } from '../common/command.js';

// Every subcommand, listed once with its summary. A command's module (and everything it imports: the fleet,
// the engine, OTA) loads only when that command runs, so `mnn-edge detect` starts as fast as detection allows.
export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

const entry = (name: string, summary: string, load: () => Promise<{ command: Command }>): CommandEntry => ({
  name,
  summary,
  load: async () => (await load()).command,
});

export const commandEntries: readonly CommandEntry[] = [
  entry(
    'run',
    'run the agent (HTTP server, auth, and every module) until SIGTERM/SIGINT',
    () => import('./run.js'),
  ),
  entry(
    'detect',
    'describe this board: SoC, CPU features, accelerators, usable MNN backends',
    () => import('./detect.js'),
  ),
  entry(
    'models',
    'list, import, pull, inspect and garbage-collect model packages',
    () => import('./models.js'),
  ),
  entry(
    'bench',
    'measure models on this board (bench models) and show the placement the numbers give',
    () => import('./bench.js'),
  ),
  entry(
    'fleet',
    'operate a fleet over MQTT: list devices, send commands, watch telemetry, read and change settings',
    () => import('./fleet.js'),
  ),
  entry('ota', 'sign, pack, publish and roll out model packages (operator tools)', () => import('./ota.js')),
  entry(
    'token',
    'print the pairing token for the dashboard login and API clients',
    () => import('./token.js'),
  ),
  entry(
    'config',
    'print the effective configuration, check it, or print its JSON schema',
    () => import('./config.js'),
  ),
  entry(
    'engine',
    'build MNN for this board and the engine addon against it (boards without a Yocto image)',
    () => import('./engine.js'),
  ),
  entry(
    'wake',
    'check a wake-word package on recordings: detections, hours scanned, detections an hour',
    () => import('./wake.js'),
  ),
  entry('version', 'print the agent version', () => import('./version.js')),
];

/** Every command loaded: for tests that check each one's usage and summary. */
export async function loadCommands(): Promise<Command[]> {
  return Promise.all(commandEntries.map((e) => e.load()));
}
