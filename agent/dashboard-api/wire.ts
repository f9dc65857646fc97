// The dashboard's wire contract: every shape the dashboard's pages read from the agent's HTTP API, and the few
// pure helpers the pages share with the agent. The browser code (dashboard/src/) imports from outside itself
// only this file; scripts/check-layers.ts (DASHBOARD_CONTRACT) fails on any other import. So a change to the
// daemon's internals reaches the browser only through a line here, where it reads as a change to what the API
// promises, and the pages never lean on how the runtime happens to be laid out.
// The shapes stay defined where the agent builds them (one definition each); this file decides which are on
// the wire. Types only, but for three values the pages need at run time: the slot names, which model tasks
// each slot can use, and the wording of a load split. Each comes from a file that imports nothing, so the
// browser bundle carries nothing of the daemon besides them.

export type { LogRecord } from '../../lib/log-tail.js';
export type { PullJobView } from '../../models/hub/pull-jobs.js';
export type { HubListing, HubRecommendations } from '../installed-models/hub-catalog.js';
export type { Candidate, SlotConstraints, SlotName } from '../plan/types.js';
export { SLOT_KINDS, SLOT_NAMES } from '../plan/types.js';
export type { LoadTimeRecord, SlotStats } from '../runtime/desired/types.js';
export { describeLoadSplit } from '../runtime/engine/load-split.js';
export type { SlotPhase, SlotState } from '../runtime/measuring/slot-states.js';
export type { InstanceLoad } from '../runtime/reconciling/load-times.js';
export type { BackendView, OverviewView } from './overview.js';
export type {
  EngineStatus,
  HubSourceView,
  InstalledModelView,
  InstallProgressView,
  OtaJobView,
  PlacementView,
  TelemetryPoint,
  WorkloadStatus,
} from './ports.js';
