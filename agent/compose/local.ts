// The local network side as compose wires it: the dashboard (its pages and live feeds over the modules'
// handles) and the mDNS announcement.
import type { LogTail } from '../../lib/log-tail.js';
import type { OtaJournal } from '../dashboard-api/adapters.js';
import { createDashboardModule } from '../dashboard-api/routes.js';
import { dashboardSourcesFrom } from '../dashboard-api/sources.js';
import type { FleetModule } from '../fleet/module.js';
import type { SessionLimiter } from '../http/session-limits.js';
import { createMdnsModule } from '../mdns/module.js';
import type { AgentContext } from '../module.js';
import type { TelemetryModule } from '../telemetry/module.js';
import type { WorkloadsModule } from '../workloads/module.js';
import { wyomingMdnsServices } from '../workloads/wyoming/start.js';
import type { Platform } from './platform.js';

/** The local network side: the dashboard (its pages and live feeds) and the mDNS announcement. */
export function localModules(
  platform: Platform,
  fleet: FleetModule,
  workloads: WorkloadsModule,
  shared: { agentVersion: string; logs: LogTail; sessions: SessionLimiter; telemetry: TelemetryModule },
  /** The OTA journal's reader (compose hands it, so that only compose imports ota/). */
  otaJournal: (db: AgentContext['db']) => OtaJournal,
) {
  const { detect, models, runtime } = platform;
  const dashboardParts = dashboardSourcesFrom({
    fleet: () => fleet.agent,
    fleetOff: () => fleet.offReason,
    boardTelemetry: () => shared.telemetry.board,
    runtime: () => runtime.runtime(),
    board: () => runtime.board(),
    engine: () => runtime.engineAvailability(),
    capabilities: () => detect.capabilities(),
    store: () => models.models()?.store,
    hubPulls: () => models.pulls(),
    planBoard: () => runtime.board(),
    workloads,
    otaJournal,
  });
  const dashboard = createDashboardModule({
    version: shared.agentVersion,
    sessions: shared.sessions,
    logTail: shared.logs,
    sources: dashboardParts.sources,
  });
  const mdns = createMdnsModule({
    board: () => detect.capabilities()?.board.model.value ?? undefined,
    soc: () => detect.capabilities()?.soc.name.value ?? undefined,
    version: shared.agentVersion,
    // Home Assistant finds the voice services as _wyoming._tcp while the Wyoming server listens.
    extraServices: () => wyomingMdnsServices(workloads),
  });
  return { dashboard, dashboardFeeds: dashboardParts.feeds, mdns };
}
