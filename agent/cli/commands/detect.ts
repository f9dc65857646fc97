import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { matchProfile } from '../../../board-support/index.js';
import { probeEngineInfo } from '../../../engine/index.js';
import type { Capabilities } from '../../../lib/capabilities.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import { createLogger } from '../../../lib/log.js';
import { readCapabilitiesCache, writeCapabilitiesCache } from '../../detect/cache.js';
import { applyEngineBackends, detect } from '../../detect/detect.js';
import { formatReport } from '../../detect/report.js';
import { engineCompiledIn, engineProbes } from '../../runtime/serving/backend-health.js';
import { parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { Command } from '../common/command.js';
import { formatHostFacts, readHostFacts } from './host-facts.js';

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

async function withEngineChain(caps: Capabilities): Promise<Capabilities> {
  const availability = await probeEngineInfo({ logger: createLogger({ write: () => {} }) });
  const compiled = engineCompiledIn(availability);
  return compiled ? applyEngineBackends(caps, compiled, engineProbes(availability)) : caps;
}

export const command: Command = {
  name: 'detect',
  summary: 'describe this board: SoC, CPU features, accelerators, usable MNN backends',
  usage:
    'mnn-edge detect [--root DIR] [--json] [--write-cache FILE] [--from-cache FILE] [--engine-backends cpu,opencl,...] [--no-engine]',
  async run(argv, io) {
    const args = parseArgs(argv, {
      values: ['root', 'write-cache', 'from-cache', 'engine-backends'],
      booleans: ['json', 'no-engine'],
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
      // On this machine (not a captured tree) the installed MNN answers the last links of each GPU backend's
      // chain: compiled in, and whether a runtime initialises and runs a graph, in a short-lived engine host.
      if (!root && !engineBackends && !args.flags['no-engine']) caps = await withEngineChain(caps);
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
    if (args.flags['json']) io.stdout.write(JSON.stringify(caps, null, 2) + '\n');
    else {
      io.stdout.write(formatReport(caps, matchProfile(caps)));
      // Only a live report describes this system; a captured tree or a cache file describes another one.
      if (!root && !fromCache) io.stdout.write(formatHostFacts(await readHostFacts()) + '\n');
    }
    return 0;
  },
};
