import { mkdirSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { matchProfile } from '../../board-support/index.js';
import type { BoardProfile } from '../../board-support/types.js';
import {
  createEngineInfo,
  type EngineAvailability,
  probeEngineInfo,
  unavailableMessage,
} from '../../engine/index.js';
import type { Capabilities } from '../../lib/capabilities.js';
import {
  planPolicyFromConfig,
  type RuntimeConfig,
  type SlotsConfig,
  slotSpecsFromConfig,
} from '../config/sections/slots.js';
import { applyEngineBackends, detect, type EngineBackendProbe } from '../detect/index.js';
import { boardFromCapabilities } from '../detect/plan-board.js';
import type { AgentBus, AgentContext, AgentModule, PublishEvent } from '../module.js';
import type { PlanBoard, PlanCatalog } from '../plan/types.js';
import { engineHostFactory } from './engine/engine-host-adapter.js';
import { EngineFailure, type EngineHostFactory } from './engine/engine-port.js';
import { GpuCacheStore } from './engine/gpu-cache.js';
import { procSystemMemory, type SystemMemory } from './engine/proc-memory.js';
import { type CommandSink, registerRuntimeCommands } from './fleet-commands.js';
import { registerRuntimeRoutes } from './routes.js';
import { type PlanSources, Runtime } from './runtime.js';
import { engineBackendProbe, engineCompiledIn, engineProbes } from './serving/backend-health.js';

// The runtime as an agent module: built from the agent's config, store and logger at start, with the planner's
// sources (board, catalog) and the engine hosts injected or defaulted here, and its HTTP routes registered.

export interface RuntimeModuleDeps {
  /** The installed models for the planner (models/: catalogFromStore(new ModelCatalog(store).variants())). */
  catalog: () => PlanCatalog | Promise<PlanCatalog>;
  /** Default: detect() below config.root + the matched board-support profile, once. */
  board?: () => PlanBoard | Promise<PlanBoard>;
  /** Default: engine hosts over the installed MNN; when MNN is missing every load fails with the loader's reason. */
  hosts?: EngineHostFactory;
  /** The store's in-use marking (ModelStore.setInUse), so GC never removes what the placement uses. */
  inUse?: (refs: { id: string; version: string }[]) => void;
  /** Default: procfs below config.root. */
  memory?: SystemMemory;
  /** The model store's install events (ModelStore is one): each install replans and, unless
   *  runtime.probeAfterInstall is false, probes the new model in the background at low priority. */
  installs?: { on(event: 'installed', listener: (ref: { id: string; version: string }) => void): () => void };
  /** MNN's availability and runtime info. Default: asked of a short-lived engine host (createEngineInfo), so
   *  the agent process never loads the addon. */
  engineInfo?: () => Promise<EngineAvailability>;
  /** The detect module's capabilities: when given (and `board` is not), the planner's board comes from them,
   *  with the engine's compiled-in backends applied to the shared document. */
  detected?: { capabilities(): Capabilities | undefined; update(caps: Capabilities): void };
  /** The fleet's registry: the runtime's commands (get-placement, set-placement, bench-models) go there. */
  commands?: CommandSink;
  /** Placement changes, fallbacks and host exits as device events (MQTT `events`). */
  publishEvent?: PublishEvent;
  /** Where new placements and slot changes go (`runtime.placement`, `runtime.slot-change`). */
  bus?: AgentBus;
  /** Receives the runtime once started (workloads, fleet and OTA take it from here). */
  onStarted?: (runtime: Runtime) => void;
}

/** The planner's board from detected capabilities, refined by the engine's compiled-in backends. */
function boardFromDetected(
  detected: NonNullable<RuntimeModuleDeps['detected']>,
  engine: EngineAvailability | undefined,
): PlanBoard {
  let caps = detected.capabilities();
  if (!caps) throw new Error('the runtime started before detection');
  // The runtime's engine probe says which backends this MNN build has: the planner never picks one it
  // lacks, and the capability document says why ("MNN built without …").
  const compiled = engineCompiledIn(engine);
  if (compiled) {
    caps = applyEngineBackends(caps, compiled, engineProbes(engine));
    detected.update(caps);
  }
  // A root without /proc/meminfo (a capture of another board): the engine hosts run on this machine, so
  // its RAM is the budget that matters.
  return boardFromCapabilities(caps, matchProfile(caps), { ramBytes: totalmem() });
}

/** The runtime's events the fleet hears about, in the order the composition root always sent them. */
function relayEvents(rt: Runtime, deps: RuntimeModuleDeps): void {
  const publish = deps.publishEvent;
  const bus = deps.bus;
  if (bus)
    for (const ev of ['switch', 'step-failed', 'runner-error', 'fallback', 'recovered', 'host-exit'] as const)
      rt.events.on(ev, () => bus.emit('runtime.slot-change', { event: ev }));
  if (!publish && !bus) return;
  rt.events.on('placement', (e) => {
    bus?.emit('runtime.placement', { revision: e.revision, reason: e.reason });
    publish?.('runtime.placement', { revision: e.revision, reason: e.reason });
  });
  if (!publish) return;
  for (const ev of [
    'fallback',
    'recovered',
    'memory-released',
    'host-exit',
    'backend-health',
    'request-rescued',
  ] as const)
    rt.events.on(ev, (data) => publish(`runtime.${ev}`, { ...data }));
}

/** Engine hosts that cannot start, for a device whose MNN is missing: every slot reports the same clear reason. */
export function unavailableHosts(reason: string): EngineHostFactory {
  return {
    engineVersion: 'unavailable',
    unavailableReason: reason,
    async start() {
      throw new EngineFailure('load', reason);
    },
  };
}

/** The board as detect sees it below `root`, planned with the matched profile's priors and thread advice. */
export function detectedBoard(
  root: string,
  engineBackends?: readonly string[],
  probes: readonly EngineBackendProbe[] = [],
): PlanBoard {
  let caps: Capabilities = detect({ root });
  if (engineBackends) caps = applyEngineBackends(caps, engineBackends, probes);
  const profile: BoardProfile | null = matchProfile(caps);
  return boardFromCapabilities(caps, profile);
}

/** Engine hosts over the MNN the probe found, or hosts that refuse with its reason. */
function hostsFor(ctx: AgentContext, availability: EngineAvailability, cwd: string): EngineHostFactory {
  if (!availability.available) {
    const reason = unavailableMessage(availability.reason);
    ctx.logger.warn('engine unavailable: models will not load', { reason });
    return unavailableHosts(reason);
  }
  return engineHostFactory({
    engineVersion: availability.info.mnnVersion,
    log: ctx.logger,
    cwd,
    gpuCache: new GpuCacheStore(ctx.config.dataDir, ctx.logger),
  });
}

export interface RuntimeModule extends AgentModule {
  runtime(): Runtime | undefined;
  /** What the engine host reported at start (for the dashboard's engine status): the agent never asks MNN
   *  itself. Undefined before start, or when the hosts were injected. */
  engineAvailability(): EngineAvailability | undefined;
  /** The board the planner last planned for (the pin dropdown offers what it can use); undefined before. */
  board(): PlanBoard | undefined;
}

export function createRuntimeModule(deps: RuntimeModuleDeps): RuntimeModule {
  let runtime: Runtime | undefined;
  let availability: EngineAvailability | undefined;
  let lastBoard: PlanBoard | undefined;
  let unroute: (() => void)[] = [];
  let unsubscribe: (() => void) | undefined;
  return {
    name: 'runtime',
    runtime: () => runtime,
    engineAvailability: () => availability,
    board: () => lastBoard,
    async start(ctx) {
      let hosts = deps.hosts;
      if (!hosts) {
        const cwd = join(ctx.config.dataDir, 'engine-tmp');
        mkdirSync(cwd, { recursive: true });
        const probed = await (deps.engineInfo ?? createEngineInfo({ logger: ctx.logger, cwd }))();
        availability = probed;
        hosts = hostsFor(ctx, probed, cwd);
      }
      let board: PlanBoard | undefined;
      const planBoard: PlanSources['board'] =
        deps.board ??
        (deps.detected ? () => boardFromDetected(deps.detected!, availability) : undefined) ??
        (() =>
          (board ??= detectedBoard(
            ctx.config.root,
            engineCompiledIn(availability),
            engineProbes(availability),
          )));
      const sources: PlanSources = {
        // The probe knows which backends this MNN build has: the planner never picks one it lacks.
        board: () => {
          const b = planBoard();
          if (b instanceof Promise) return b.then((x) => (lastBoard = x));
          lastBoard = b;
          return b;
        },
        catalog: deps.catalog,
      };
      const cfg = ctx.config['runtime'] as RuntimeConfig | undefined;
      // With real engine hosts, a GPU backend that fails live is probed back in fresh hosts before use.
      const probeCwd = join(ctx.config.dataDir, 'engine-tmp');
      const backendHealth =
        !deps.hosts && availability?.available
          ? { probe: engineBackendProbe(() => probeEngineInfo({ logger: ctx.logger, cwd: probeCwd })) }
          : undefined;
      runtime = new Runtime({
        ...(backendHealth ? { backendHealth } : {}),
        db: ctx.db,
        clock: ctx.clock,
        log: ctx.logger,
        hosts,
        memory: deps.memory ?? procSystemMemory(ctx.config.root),
        sources,
        policy: planPolicyFromConfig(cfg),
        ...(deps.inUse ? { inUse: deps.inUse } : {}),
        options: {
          ...(cfg?.drainTimeoutMs !== undefined ? { drainTimeoutMs: cfg.drainTimeoutMs } : {}),
          ...(cfg?.swapReserveMiB !== undefined
            ? { memoryReserveBytes: cfg.swapReserveMiB * 1024 * 1024 }
            : {}),
        },
      });
      unroute = registerRuntimeRoutes(ctx, runtime);
      await runtime.configure(slotSpecsFromConfig(ctx.config['slots'] as SlotsConfig | undefined));
      runtime.start();
      const rt = runtime;
      unsubscribe = deps.installs?.on('installed', (ref) => {
        void rt.replan(`model ${ref.id}@${ref.version} installed`).then(
          () => {
            if (cfg?.probeAfterInstall !== false)
              rt.probeInBackground({ modelId: ref.id, version: ref.version });
          },
          (err: unknown) => ctx.logger.warn('replan after install failed', { error: String(err) }),
        );
      });
      if (deps.commands) registerRuntimeCommands(deps.commands, rt);
      relayEvents(rt, deps);
      deps.onStarted?.(runtime);
    },
    async stop() {
      unsubscribe?.();
      unsubscribe = undefined;
      for (const off of unroute) off();
      unroute = [];
      await runtime?.stop();
    },
  };
}
