import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from '../common/command.js';

/**
 * The version in the project's package.json. Searched upwards because the module runs from agent/cli/commands
 * under tsx and from dist/agent/cli/commands once built: a fixed relative path is right in only one of them.
 */
export function agentVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'mnn-edge' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // no package.json here: keep climbing
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('Cannot find the mnn-edge package.json above the agent code');
    dir = parent;
  }
}

export const command: Command = {
  name: 'version',
  summary: 'print the agent version',
  usage: 'mnn-edge version',
  async run(_argv, io) {
    io.stdout.write(`${agentVersion()}\n`);
    return 0;
  },
};
