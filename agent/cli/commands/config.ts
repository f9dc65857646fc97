import { loadConfig } from '../../config/load.js';
import { type AgentConfig, agentConfigSchema } from '../../config/schema.js';
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
): { config: AgentConfig; source: string } {
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
  return loadConfig({ ...(path !== undefined ? { path } : {}), overrides, env });
}

const SECRET_KEYS = new Set(['password', 'key', 'token', 'secret']);

/** The effective configuration with secrets masked, safe to paste into a bug report. */
export function redactConfig(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactConfig);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      SECRET_KEYS.has(k) && typeof v === 'string' && !v.startsWith('/') ? '***' : redactConfig(v),
    ]),
  );
}

export const command: Command = {
  name: 'config',
  summary: 'print the effective configuration, check it, or print its JSON schema',
  usage: 'mnn-edge config [--config FILE] [--data-dir DIR] [--root DIR] [--check | --schema]',
  async run(argv, io) {
    const args = parseArgs(argv, { values: CONFIG_FLAGS, booleans: ['check', 'schema'] });
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    if (args.flags['check'] && args.flags['schema'])
      throw new UsageError('--check and --schema are exclusive');
    if (args.flags['schema']) {
      io.stdout.write(`${JSON.stringify(agentConfigSchema, null, 2)}\n`);
      return 0;
    }
    const { config, source } = configFromFlags(args, io.env);
    if (args.flags['check']) {
      io.stdout.write(`configuration OK (${source})\n`);
      return 0;
    }
    io.stdout.write(`${JSON.stringify(redactConfig(config), null, 2)}\n`);
    return 0;
  },
};
