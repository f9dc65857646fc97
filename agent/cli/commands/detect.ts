import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { matchProfile } from '../../../board-support/index.js';
import { MnnEdgeError } from '../../common/errors.js';
import { readCapabilitiesCache, writeCapabilitiesCache } from '../../detect/cache.js';
import { detect } from '../../detect/detect.js';
import { formatReport } from '../../detect/report.js';
import type { Capabilities } from '../../detect/types.js';
import { parseArgs, stringFlag, UsageError } from '../args.js';
import type { Command } from '../command.js';

function checkRoot(root: string): string {
  const abs = resolve(root);
  let isDir = false;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new UsageError(`--root ${root} does not exist`);
  }
  if (!isDir) throw new UsageError(`--root ${root} is not a directory`);
  return abs;
}

export const command: Command = {
  name: 'detect',
  summary: 'describe this board: SoC, CPU features, accelerators, usable MNN backends',
  usage:
    'mnn-edge detect [--root DIR] [--json] [--write-cache FILE] [--from-cache FILE] [--engine-backends cpu,opencl,...]',
  async run(argv, io) {
    const args = parseArgs(argv, {
      values: ['root', 'write-cache', 'from-cache', 'engine-backends'],
      booleans: ['json'],
    });
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    const root = stringFlag(args, 'root');
    const fromCache = stringFlag(args, 'from-cache');
    const writeCache = stringFlag(args, 'write-cache');
    const engine = stringFlag(args, 'engine-backends');
    if (fromCache && (root || writeCache || engine))
      throw new UsageError(
        '--from-cache reads a stored document; it cannot be combined with --root, --write-cache or --engine-backends',
      );

    let caps: Capabilities;
    if (fromCache) caps = readCapabilitiesCache(fromCache);
    else {
      const engineBackends = engine
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (engineBackends?.length === 0)
        throw new UsageError('--engine-backends needs a comma-separated list');
      caps = detect({ root: root ? checkRoot(root) : '/', ...(engineBackends ? { engineBackends } : {}) });
    }
    if (writeCache) {
      try {
        writeCapabilitiesCache(writeCache, caps);
      } catch (err) {
        throw new MnnEdgeError(
          'ECACHE',
          `cannot write capability cache ${writeCache}: ${(err as Error).message}`,
        );
      }
    }
    io.stdout.write(
      args.flags['json'] ? JSON.stringify(caps, null, 2) + '\n' : formatReport(caps, matchProfile(caps)),
    );
    return 0;
  },
};
