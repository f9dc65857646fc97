import { type ConfigInputs, loadConfigWithInputs } from '../../config/load.js';
import type { HistoryEntry } from '../../config/overlay-store.js';
import { type AgentConfig, agentConfigSchema } from '../../config/schema.js';
import type { ConfigSource } from '../../config/sources.js';
import { formatKeyRows, keyRows } from '../../settings/view.js';
import { type ParsedArgs, parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { Command } from '../common/command.js';

// Flags shared by the commands that act on the agent's configuration (run, token, config).
export const CONFIG_FLAGS = ['config', 'data-dir', 'root'] as const;

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw new UsageError(`--port expects an integer 0-65535, got "${value}"`);
  return port;
}

/** Load the configuration file (--config or /etc/mnn-edge/agent.json) with the command-line flags on top. */
export function configFromFlags(
  args: ParsedArgs,
  env: NodeJS.ProcessEnv,
): { config: AgentConfig; source: string; inputs: ConfigInputs; sources: Map<string, ConfigSource> } {
  const http: Record<string, unknown> = {};
  const port = stringFlag(args, 'port');
  if (port !== undefined) http['port'] = parsePort(port);
  const bind = stringFlag(args, 'bind');
  if (bind !== undefined) http['bind'] = bind;
  const overrides: Record<string, unknown> = {};
  if (Object.keys(http).length > 0) overrides['http'] = http;
  const dataDir = stringFlag(args, 'data-dir');
  if (dataDir !== undefined) overrides['dataDir'] = dataDir;
  const root = stringFlag(args, 'root');
  if (root !== undefined) overrides['root'] = root;
  const path = stringFlag(args, 'config');
  return loadConfigWithInputs({ ...(path !== undefined ? { path } : {}), overrides, env });
}

import { redactConfig } from '../../config/redact.js';

export { redactConfig };

function formatHistory(entries: readonly HistoryEntry[]): string {
  if (entries.length === 0) return 'no run-time settings changes yet\n';
  const show = (v: unknown) => (v === undefined ? '(file)' : JSON.stringify(redactConfig(v)));
  return entries
    .map((e) => {
      const head = `revision ${e.revision}  ${e.at}  ${e.who}${e.note ? `  (${e.note})` : ''}`;
      const lines = e.changes.map((c) => `  ${c.key}: ${show(c.old)} -> ${show(c.new)}`);
      return [head, ...lines].join('\n');
    })
    .join('\n')
    .concat('\n');
}

export const command: Command = {
  name: 'config',
  summary:
    'print the effective configuration with where each value came from, its change log, check it, or print its schema',
  usage:
    'mnn-edge config [--config FILE] [--data-dir DIR] [--root DIR] [--json | --check | --schema]\n       mnn-edge config history [--limit N] [--json]',
  async run(argv, io) {
    const args = parseArgs(argv, {
      values: [...CONFIG_FLAGS, 'limit'],
      booleans: ['check', 'schema', 'json'],
    });
    const [sub, extra] = args.positionals;
    if (extra !== undefined || (sub !== undefined && sub !== 'history'))
      throw new UsageError(`unexpected argument '${extra ?? sub}'`);
    if (args.flags['check'] && args.flags['schema'])
      throw new UsageError('--check and --schema are exclusive');
    if (args.flags['schema']) {
      io.stdout.write(`${JSON.stringify(agentConfigSchema, null, 2)}\n`);
      return 0;
    }
    const { config, source, inputs, sources } = configFromFlags(args, io.env);
    const problem = inputs.overlay.problem;
    if (problem) io.stderr.write(`mnn-edge config: ${problem}\n`);
    if (sub === 'history') {
      const limitText = stringFlag(args, 'limit');
      const limit = limitText === undefined ? 50 : Number(limitText);
      if (!Number.isInteger(limit) || limit < 1)
        throw new UsageError(`--limit expects a positive integer, got "${limitText}"`);
      const entries = inputs.store.history(limit);
      // Each entry holds the whole overlay it wrote, MCP server tokens included: masked like `config --json`.
      io.stdout.write(
        args.flags['json'] ? `${JSON.stringify(redactConfig(entries), null, 2)}\n` : formatHistory(entries),
      );
      return 0;
    }
    if (args.flags['check']) {
      io.stdout.write(
        `configuration OK (${source}; run-time settings revision ${inputs.overlay.revision})\n`,
      );
      return 0;
    }
    if (args.flags['json']) {
      io.stdout.write(`${JSON.stringify(redactConfig(config), null, 2)}\n`);
      return 0;
    }
    io.stdout.write(
      `# ${source}; run-time settings revision ${inputs.overlay.revision} (${inputs.store.path})\n` +
        `# source: default < file < overlay (run-time settings) < flag\n${formatKeyRows(keyRows(config, sources))}\n`,
    );
    return 0;
  },
};
