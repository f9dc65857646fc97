import { readFileSync } from 'node:fs';
import type { Command } from '../command.js';

export function agentVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
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
