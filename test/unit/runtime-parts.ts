// The runtime's parts built alone, for the unit tests that test one part directly (planning, serving,
// measurement, failover, the instance table, the reconciler): the shared RuntimeCore over in-process engine
// hosts (runtime-fakes.ts), an in-memory SQLite store and a trigger that only counts. Unit tests only.

import {
  type CatalogModel,
  defaultPlanPolicy,
  type Placement,
  type PlanBoard,
  type SlotSpec,
} from '../../agent/plan/types.js';
import { DesiredStateStore } from '../../agent/runtime/desired/desired-state.js';
import { FailureBook } from '../../agent/runtime/desired/failures.js';
import { ProbeStore } from '../../agent/runtime/desired/probe-store.js';
import { specOf } from '../../agent/runtime/desired/target.js';
import {
  defaultRuntimeOptions,
  type RuntimeDeps,
  type RuntimeOptions,
} from '../../agent/runtime/desired/types.js';
import { runtimeMigrations } from '../../agent/runtime/migrations.js';
import type { RuntimeEvents } from '../../agent/runtime/reconciling/events.js';
import { Instance } from '../../agent/runtime/reconciling/instance.js';
import { InstanceTable, type RuntimeCore } from '../../agent/runtime/reconciling/instance-table.js';
import { Planning } from '../../agent/runtime/reconciling/planning.js';
import { coreMigration } from '../../agent/store/core-migration.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
import { type FakeHost, FakeWorld } from './runtime-fakes.js';

export const MiB = 1024 * 1024;

export const testBoard: PlanBoard = {
  boardId: 'test-board',
  ramBytes: 8192 * MiB,
  cpuClusters: [{ name: 'big', cpus: [0, 1], maxFreqKHz: 2_000_000 }],
  backends: [
    { backend: 'cpu', available: true, reason: 'always' },
    { backend: 'opencl', available: true, reason: 'libOpenCL.so' },
  ],
  priors: [],
};

export function tinyLlm(version: string, backends: ('cpu' | 'opencl')[] = ['cpu', 'opencl']): CatalogModel {
  return {
    id: 'tiny-llm',
    version,
    kind: 'llm',
    variants: [
      {
        variantId: 'fp32',
        quant: 'fp32',
        weightBytes: 500 * MiB,
        kvBytesPerToken: 0,
        backends,
        configPath: `/m/tiny-llm-${version}/config.json`,
      },
    ],
  };
}

export const testSlots: SlotSpec[] = [
  { slot: 'voice.vad', use: { builtin: 'energy-vad' }, priority: 100, contextTokens: 0, enabled: true },
  {
    slot: 'voice.llm',
    use: { model: { id: 'tiny-llm', version: '1' } },
    priority: 80,
    contextTokens: 256,
    enabled: true,
  },
  {
    slot: 'vision.vlm',
    use: { model: { id: 'tiny-llm' } },
    priority: 50,
    contextTokens: 256,
    enabled: false,
  },
];

export interface Parts {
  world: FakeWorld;
  core: RuntimeCore;
  log: ReturnType<typeof createMemoryLogger>;
  events: TypedEventEmitter<RuntimeEvents>;
  desired: DesiredStateStore;
  probes: ProbeStore;
  planning: Planning;
  /** How often a part asked for a reconcile run. */
  triggers(): number;
  /** Every payload of one runtime event so far, in order. */
  seen<K extends keyof RuntimeEvents & string>(name: K): RuntimeEvents[K][];
  stop(): void;
}

export function runtimeParts(
  options: Partial<RuntimeOptions> = {},
  catalog: CatalogModel[] = [tinyLlm('1'), tinyLlm('2')],
  deps: Partial<RuntimeDeps> = {},
): Parts {
  const world = new FakeWorld();
  const db = openStore(':memory:', { migrations: [coreMigration, ...runtimeMigrations] });
  const log = createMemoryLogger();
  const events = new TypedEventEmitter<RuntimeEvents>();
  const opts: RuntimeOptions = {
    ...defaultRuntimeOptions,
    drainTimeoutMs: 500,
    drainGraceMs: 100,
    acquireTimeoutMs: 2_000,
    memoryReserveBytes: 256 * MiB,
    release: { timeoutMs: 200, pollMs: 5, tolerance: 0.1 },
    ...options,
  };
  const runtimeDeps: RuntimeDeps = {
    db,
    clock: systemClock,
    log,
    hosts: world,
    memory: world,
    sources: { board: () => testBoard, catalog: () => ({ models: catalog }) },
    policy: defaultPlanPolicy,
    ...deps,
  };
  let triggers = 0;
  let stopped = false;
  const core: RuntimeCore = {
    deps: runtimeDeps,
    opts,
    log,
    events,
    failures: new FailureBook(systemClock, opts.failureBackoff),
    table: new InstanceTable(systemClock, events),
    trigger: () => {
      triggers++;
    },
    health: () => ({
      healthy: true,
      running: false,
      runningForMs: 0,
      runs: 0,
      consecutiveFailures: 0,
      lastError: undefined,
      lastOkAtMs: undefined,
      retryAtMs: undefined,
      reason: 'test',
    }),
    stopped: () => stopped,
  };
  const desired = new DesiredStateStore(db, systemClock);
  const probes = new ProbeStore(db);
  const seen = new Map<string, unknown[]>();
  const listen = (name: string) => {
    const list: unknown[] = [];
    seen.set(name, list);
    (events as TypedEventEmitter<Record<string, unknown>>).on(name, (p) => {
      list.push(p);
    });
  };
  for (const name of [
    'transition',
    'fallback',
    'recovered',
    'host-exit',
    'placement',
    'plan',
    'switch',
    'step-failed',
  ])
    listen(name);
  return {
    world,
    core,
    log,
    events,
    desired,
    probes,
    planning: new Planning(core, desired, probes, defaultPlanPolicy),
    triggers: () => triggers,
    seen: <K extends keyof RuntimeEvents & string>(name: K) => (seen.get(name) ?? []) as RuntimeEvents[K][],
    stop: () => {
      stopped = true;
    },
  };
}

/** Plans the test slots: a placement the parts can serve. */
export async function planned(parts: Parts, slots: SlotSpec[] = testSlots): Promise<Placement> {
  parts.desired.replaceConfig(slots);
  return parts.planning.replan('test');
}

/** What the reconciler would have done for one planned instance: a loaded host, ready, serving its slots. */
export async function serveInstance(parts: Parts, placement: Placement, index = 0): Promise<Instance> {
  const planned = placement.instances[index];
  if (!planned) throw new Error(`the placement has no instance ${index}`);
  const host = (await parts.world.start()) as FakeHost;
  const spec = specOf(planned.chosen);
  await host.load(spec);
  const inst = new Instance(spec, host, systemClock.nowMs());
  inst.status = 'ready';
  parts.core.table.instances.set(spec.key, inst);
  for (const slot of planned.slots) parts.core.table.serving[slot] = spec.key;
  return inst;
}
