import type { EngineAvailability } from '../../engine/src/loader.js';
import type { Capabilities } from '../../lib/capabilities.js';
import type { InstalledPackage, ModelStore } from '../../models/index.js';
import type { FleetAgent } from '../fleet/agent.js';
import type { AgentBus, AgentModule, Handle } from '../module.js';
import type { Placement } from '../plan/types.js';
import type { SlotState } from '../runtime/measuring/slot-states.js';

// The retained documents operators and Home Assistant read (capabilities, models, placement). Set once the
// fleet exists (the fleet republishes them on every reconnect) and again whenever they change.

export interface DocumentSources {
  agentVersion: string;
  fleet: Handle<FleetAgent>;
  capabilities: Handle<Capabilities>;
  store: Handle<ModelStore>;
  placement: Handle<Placement>;
  /** Each configured slot's state, published with the placement: operators read the dashboard's verdict. */
  slotStates?: () => readonly SlotState[];
  /** The agent's bus: a new placement or a slot change republishes the placement document. */
  bus?: AgentBus;
  /** The engine as the runtime probed it; undefined while the runtime is not running. */
  engine: Handle<EngineAvailability>;
}

export interface DocumentsModule extends AgentModule {
  publishCapabilities(): void;
  publishModels(): void;
  publishPlacement(): void;
  publishAll(): void;
}

/** One package in the retained `models` document. */
export function packageEntry(p: InstalledPackage): Record<string, unknown> {
  const prov = p.manifest.provenance;
  return {
    id: p.id,
    version: p.version,
    task: p.task,
    sizeBytes: p.sizeBytes,
    derived: p.derived,
    inUse: p.inUse,
    kept: p.kept,
    rollbackHold: p.rollbackHold,
    lastUsedAt: p.lastUsedAt,
    // Hub pulls carry no signature: operators see where one came from and that it is trusted on first use.
    ...(prov
      ? { trust: prov.trust, pulledFrom: { hub: prov.hub, repo: prov.repo, commit: prov.commit } }
      : {}),
  };
}

export function createDocumentsModule(sources: DocumentSources): DocumentsModule {
  const publishPlacement = (): void => {
    const placement = sources.placement();
    if (placement)
      sources
        .fleet()
        ?.setDocument('placement', { ...placement, slotStates: [...(sources.slotStates?.() ?? [])] });
  };
  const publishModels = (): void => {
    const store = sources.store();
    if (!store) return;
    const installed = store.list();
    const summary = installed
      .map((p) => `${p.id}@${p.version}`)
      .sort()
      .join(', ');
    sources.fleet()?.setDocument('models', {
      // Home Assistant's update entity compares these two strings; a pending OTA job is reported on ota/status.
      installedVersion: summary,
      latestVersion: summary,
      packages: installed.map(packageEntry),
    });
  };
  const publishCapabilities = (): void => {
    const caps = sources.capabilities();
    if (!caps) return;
    const engine = sources.engine();
    sources.fleet()?.setDocument('capabilities', {
      ...caps,
      agentVersion: sources.agentVersion,
      engine: engine?.available
        ? { available: true, mnnVersion: engine.info.mnnVersion }
        : { available: false, reason: engine?.reason ?? 'not probed yet' },
    });
  };
  const publishAll = (): void => {
    publishCapabilities();
    publishModels();
    publishPlacement();
  };
  let watched: ModelStore | undefined;
  return {
    name: 'documents',
    publishCapabilities,
    publishModels,
    publishPlacement,
    publishAll,
    start() {
      publishAll();
      sources.bus?.on('documents', 'runtime.placement', publishPlacement);
      sources.bus?.on('documents', 'runtime.slot-change', publishPlacement);
      watched = sources.store();
      watched?.on('installed', publishModels);
      watched?.on('removed', publishModels);
    },
    stop() {
      sources.bus?.removeOwner('documents');
      watched?.off('installed', publishModels);
      watched?.off('removed', publishModels);
      watched = undefined;
    },
  };
}
