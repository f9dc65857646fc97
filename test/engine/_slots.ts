// Workloads over real engine hosts: the fixture models imported into a model store (bare MNN exports, so the
// store derives their manifests), the runtime planning the configured slots on a fixed one-thread CPU board, and
// every model running in its own engine host process. Shared by engine, integration and e2e tests.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { type SlotsConfig, slotSpecsFromConfig } from '../../agent/config/sections/slots.js';
import type { AgentContext, AgentModule } from '../../agent/module.js';
import { catalogFromStore } from '../../agent/plan/from-catalog.js';
import type { PlanBoard } from '../../agent/plan/types.js';
import { engineHostFactory } from '../../agent/runtime/engine/engine-host-adapter.js';
import type { EngineHostFactory } from '../../agent/runtime/engine/engine-port.js';
import { procSystemMemory } from '../../agent/runtime/engine/proc-memory.js';
import { createRuntimeModule } from '../../agent/runtime/module.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import { openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import { probeEngineInfo } from '../../engine/index.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelCatalog, ModelStore } from '../../models/index.js';
import { modelFixturesDir } from '../helpers/paths.js';

export type FixtureModel = 'tiny-llm' | 'tiny-omni-audio' | 'tiny-vlm' | 'silero-vad';
/** A shared fixture by name, or a directory of the test's own (a damaged copy) imported under an id. */
export type ModelSource = FixtureModel | { path: string; id: string };

/** The shared machine has 2 cores: one thread per host keeps parallel test files from starving each other. */
export const testBoard: PlanBoard = {
  boardId: 'engine-test-host',
  ramBytes: totalmem(),
  cpuClusters: [],
  backends: [{ backend: 'cpu', available: true, reason: 'MNN CPU runtime' }],
  priors: [],
  threadAdvice: { threads: 1, cpus: [], reason: '1 thread: the test machine is shared' },
};

/** Slots for the voice pipeline of the fixtures: Silero VAD, tiny-omni-audio hearing, tiny-llm replying. */
export const voiceSlots: SlotsConfig = {
  'voice.vad': { model: 'silero-vad' },
  'voice.asr': { model: 'tiny-omni-audio' },
  'voice.llm': { model: 'tiny-llm' },
};

export interface SlotModules {
  /** Put before the workloads module in the agent's module list. */
  modules: AgentModule[];
  runtime(): Runtime | undefined;
  /** Resolves once every configured slot is served (or failed to be). */
  settled(): Promise<void>;
  /** An installed package's directory (the workloads read a wake-word package's keywords there). */
  packageDir(ref: { id: string; version: string }): string | undefined;
}

/** A models module: a store in the agent's data dir with these fixtures imported (version 1.0.0) at start. */
export function fixtureModelsModule(fixtures: readonly ModelSource[]): {
  module: AgentModule;
  store(): ModelStore | undefined;
} {
  let store: ModelStore | undefined;
  return {
    store: () => store,
    module: {
      name: 'models',
      async start(ctx: AgentContext) {
        store = ModelStore.open({
          dataDir: ctx.config.dataDir,
          db: ctx.db,
          clock: ctx.clock,
          log: ctx.logger,
        }).store;
        for (const f of fixtures)
          await (typeof f === 'string'
            ? store.import(join(modelFixturesDir, f), { version: '1.0.0' })
            : store.import(f.path, { id: f.id, version: '1.0.0' }));
      },
      stop() {
        store?.close();
      },
    },
  };
}

/**
 * A models module (a store in the agent's data dir, the fixtures imported at start) and the real runtime module
 * over it. The slots come from the agent config's `slots` section, as in production.
 */
export function slotRuntimeModules(
  fixtures: readonly ModelSource[],
  options: { hosts?: EngineHostFactory } = {},
): SlotModules {
  const { module: models, store: storeOf } = fixtureModelsModule(fixtures);
  const runtime = createRuntimeModule({
    catalog: () => {
      const store = storeOf();
      return catalogFromStore(store ? new ModelCatalog(store).variants() : []);
    },
    board: () => testBoard,
    // Tests run agents with a fixture root; the hosts' memory is this machine's.
    memory: procSystemMemory('/'),
    ...(options.hosts ? { hosts: options.hosts } : {}),
  });
  return {
    modules: [models, runtime],
    runtime: () => runtime.runtime(),
    async settled() {
      await runtime.runtime()?.settled();
    },
    packageDir(ref) {
      const store = storeOf();
      return store?.get(ref) ? store.packageDir(ref) : undefined;
    },
  };
}

/** Fails the test with the runtime's own account when a slot is not served. */
export function assertServed(t: ExecutionContext, runtime: Runtime | undefined, slots: SlotsConfig): void {
  const state = runtime?.state();
  for (const slot of Object.keys(slots)) {
    const info = runtime?.slotInfo(slot as keyof SlotsConfig);
    t.true(
      info?.status === 'placed' && state?.serving[slot as keyof SlotsConfig] !== undefined,
      `${slot}: ${JSON.stringify(info)}; failures: ${JSON.stringify(state?.failures)}`,
    );
  }
}

/** A runtime without an agent around it (engine tests of the workloads): store, hosts and slots as above. */
export async function startSlotRuntime(
  fixtures: readonly ModelSource[],
  slots: SlotsConfig,
): Promise<{ runtime: Runtime; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-slots-'));
  const log = createMemoryLogger(5000);
  const db = openStore(join(dir, 'agent.db'), { migrations: allMigrations });
  const { store } = ModelStore.open({ dataDir: dir, db, log });
  for (const f of fixtures)
    await (typeof f === 'string'
      ? store.import(join(modelFixturesDir, f), { version: '1.0.0' })
      : store.import(f.path, { id: f.id, version: '1.0.0' }));
  const info = await probeEngineInfo({ logger: log, cwd: dir });
  if (!info.available) throw new Error(`engine not available: ${info.reason}`);
  const runtime = new Runtime({
    db,
    clock: systemClock,
    log,
    hosts: engineHostFactory({ engineVersion: info.info.mnnVersion, log, cwd: dir }),
    memory: procSystemMemory('/'),
    sources: { board: () => testBoard, catalog: () => catalogFromStore(new ModelCatalog(store).variants()) },
  });
  await runtime.configure(slotSpecsFromConfig(slots));
  runtime.start();
  await runtime.settled();
  return {
    runtime,
    async close() {
      await runtime.stop();
      store.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
