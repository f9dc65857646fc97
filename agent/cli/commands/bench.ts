import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngineInfo, type RuntimeInfo, unavailableMessage } from '../../../engine/index.js';
import { systemClock } from '../../../lib/clock.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import { createLogger, type Logger } from '../../../lib/log.js';
import { ModelCatalog, ModelStore, parseRef } from '../../../models/index.js';
import {
  planPolicyFromConfig,
  type RuntimeConfig,
  type SlotsConfig,
  slotSpecsFromConfig,
} from '../../config/sections/slots.js';
import { explainPlacement } from '../../plan/explain.js';
import { catalogFromStore } from '../../plan/from-catalog.js';
import { planPlacement } from '../../plan/planner.js';
import type { ProbeResult } from '../../plan/types.js';
import { ProbeStore } from '../../runtime/desired/probe-store.js';
import { specOf } from '../../runtime/desired/target.js';
import { engineHostFactory } from '../../runtime/engine/engine-host-adapter.js';
import { GpuCacheStore } from '../../runtime/engine/gpu-cache.js';
import { probeCandidate, probeCandidates } from '../../runtime/measuring/probe.js';
import { detectedBoard } from '../../runtime/module.js';
import { engineCompiledIn, engineProbes } from '../../runtime/serving/backend-health.js';
import { openStore } from '../../store/database.js';
import { type ParsedArgs, parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo, Command } from '../common/command.js';
import { configFromFlags } from './config.js';

// `mnn-edge bench models`: the measured-selection probe, run by hand. Every (variant, backend) candidate the
// planner could choose on this board is loaded in its own engine host and timed on a fixed prompt; the numbers
// go to the store (keyed by model version, backend config, engine version and board) and the placement they
// lead to is printed with them.

const USAGE = `mnn-edge bench models [--model ID[@VERSION]] [--list] [--json] [--data-dir DIR] [--config FILE] [--root DIR]
  --model  probe only this model (default: every installed model)
  --list   print the stored results and the placement they give, without probing`;

function fmt(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '-';
}

export function probeTable(results: readonly ProbeResult[]): string {
  const rows = [
    ['model', 'variant', 'config', 'load ms', 'prefill tok/s', 'decode tok/s', 'peak RSS MiB', 'result'],
  ];
  for (const r of results)
    rows.push([
      `${r.modelId}@${r.version}`,
      r.variantId,
      r.config,
      fmt(r.loadMs, 0),
      r.ok ? fmt(r.prefillTokPerSec) : '-',
      r.ok ? fmt(r.decodeTokPerSec) : '-',
      r.ok ? fmt(r.peakRssBytes / 1048576, 0) : '-',
      r.ok ? 'ok' : `failed: ${r.error ?? 'unknown'}`,
    ]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return (
    rows
      .map((row) =>
        row
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

interface BenchContext {
  config: ReturnType<typeof configFromFlags>['config'];
  log: Logger;
  scratch: string;
  info: RuntimeInfo;
  filter: { modelId?: string; version?: string };
  modelArg: string | undefined;
}

async function benchModels(args: ParsedArgs, io: CliIo, ctx: BenchContext): Promise<number> {
  const { config, log, scratch, info, filter, modelArg } = ctx;
  const engineVersion = info.mnnVersion;
  const engine = { available: true as const, info };
  // The engine's chain decides which GPU backends are candidates (Vulkan on lavapipe is; OpenCL on pocl is not).
  const board = detectedBoard(config.root, engineCompiledIn(engine), engineProbes(engine));
  const db = openStore(join(config.dataDir, 'agent.db'));
  const { store } = ModelStore.open({ dataDir: config.dataDir, db });
  try {
    const catalog = catalogFromStore(new ModelCatalog(store).variants());
    const policy = planPolicyFromConfig(config['runtime'] as RuntimeConfig | undefined);
    const probes = new ProbeStore(db);
    const fresh: ProbeResult[] = [];
    if (!args.flags['list']) {
      const candidates = probeCandidates(board, catalog, policy, engineVersion, filter);
      if (candidates.length === 0)
        throw new MnnEdgeError(
          'ENOENT',
          modelArg ? `No installed model matches ${modelArg}` : 'No models installed: nothing to measure',
        );
      const hosts = engineHostFactory({
        engineVersion,
        log,
        cwd: scratch,
        gpuCache: new GpuCacheStore(config.dataDir, log),
      });
      for (const c of candidates) {
        if (!args.flags['json']) io.stdout.write(`probing ${c.key} …\n`);
        const r = await probeCandidate(specOf(c), { hosts, boardId: board.boardId, clock: systemClock });
        probes.put(r);
        fresh.push(r);
      }
    }
    const stored = probes.forBoard(board.boardId, engineVersion);
    const placement = planPlacement({
      board,
      catalog,
      slots: slotSpecsFromConfig(config['slots'] as SlotsConfig | undefined),
      constraints: {},
      probes: stored,
      engineVersion,
      policy,
    });
    if (args.flags['json']) {
      io.stdout.write(
        `${JSON.stringify({ board: board.boardId, engineVersion, ...(board.emulated ? { emulated: board.emulated } : {}), results: fresh, stored, placement }, null, 2)}\n`,
      );
      return fresh.some((r) => !r.ok) ? 1 : 0;
    }
    io.stdout.write(`\nboard ${board.boardId}, MNN ${engineVersion}: ${stored.length} stored result(s)\n`);
    io.stdout.write(probeTable(stored));
    // The speeds above are real numbers of the wrong machine: say so before anyone reads them as the board's.
    if (board.emulated)
      io.stdout.write(`speeds not the board's: ${board.emulated}; the planner does not choose by them\n`);
    io.stdout.write(`\n${explainPlacement(placement)}\n`);
    return fresh.some((r) => !r.ok) ? 1 : 0;
  } finally {
    store.close();
    db.close();
  }
}

/**
 * `--list` reads the store and needs no engine. Without one, the placement cannot be computed (it depends on the
 * engine's version and backends), so every stored result for this board is shown, each with its engine version.
 */
function listWithoutEngine(
  args: ParsedArgs,
  io: CliIo,
  config: BenchContext['config'],
  reason: string,
): number {
  const board = detectedBoard(config.root);
  const db = openStore(join(config.dataDir, 'agent.db'));
  try {
    const stored = new ProbeStore(db).all().filter((r) => r.boardId === board.boardId);
    const note = `${unavailableMessage(reason)} Without it there is no placement to show.`;
    if (args.flags['json']) {
      io.stdout.write(
        `${JSON.stringify({ board: board.boardId, engineVersion: null, engine: { available: false, reason }, results: [], stored, placement: null }, null, 2)}\n`,
      );
      return 0;
    }
    const engines = [...new Set(stored.map((r) => r.engineVersion))].map((v) => `MNN ${v}`).join(', ');
    io.stdout.write(
      `board ${board.boardId}: ${stored.length} stored result(s)${stored.length > 0 ? ` (measured with ${engines})` : ''}\n`,
    );
    if (stored.length > 0) io.stdout.write(probeTable(stored));
    io.stdout.write(`\n${note}\n`);
    return 0;
  } finally {
    db.close();
  }
}

export const command: Command = {
  name: 'bench',
  summary: 'measure models on this board (bench models) and show the placement the numbers give',
  usage: USAGE,
  async run(argv, io) {
    const args = parseArgs(argv, {
      values: ['model', 'data-dir', 'config', 'root'],
      booleans: ['list', 'json'],
    });
    const [what, ...extra] = args.positionals;
    if (what !== 'models')
      throw new UsageError(what ? `unknown benchmark '${what}'` : 'missing what to bench');
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
    const modelArg = stringFlag(args, 'model');
    let filter: { modelId?: string; version?: string } = {};
    if (modelArg !== undefined) {
      const ref = modelArg.includes('@') ? parseRef(modelArg) : { id: modelArg };
      filter = 'version' in ref ? { modelId: ref.id, version: ref.version } : { modelId: ref.id };
    }

    const { config } = configFromFlags(args, io.env);
    const log = createLogger({ level: 'warn', write: (line) => io.stderr.write(`${line}\n`) });
    const scratch = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-'));
    try {
      // Asked of a short-lived engine host, as the daemon does: MNN loaded here would print its CPU banner on
      // this process's stdout, and `--json` output must be nothing but the JSON document.
      const availability = await createEngineInfo({ logger: log, cwd: scratch, env: io.env })();
      if (!availability.available) {
        if (args.flags['list']) return listWithoutEngine(args, io, config, availability.reason);
        throw new MnnEdgeError('ENOENGINE', unavailableMessage(availability.reason));
      }
      return await benchModels(args, io, { config, log, scratch, info: availability.info, filter, modelArg });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  },
};
