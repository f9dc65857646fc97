// GET /metrics as compose wires it: a snapshot over what the runtime, the fleet, the workloads and the OTA
// journal keep anyway, and counters fed by their events.
import type { FleetModule } from '../fleet/module.js';
import { createMetricsModule } from '../metrics/module.js';
import type { AgentContext, AgentModule } from '../module.js';
import type { SettingsModule } from '../settings/module.js';
import type { TelemetryModule } from '../telemetry/module.js';
import type { WorkloadsModule } from '../workloads/module.js';
import type { Platform } from './platform.js';

/** GET /metrics over what the runtime, the fleet, the workloads and the OTA journal keep anyway. */
export function metricsModule(
  platform: Platform,
  fleet: FleetModule,
  workloads: WorkloadsModule,
  more: { version: string; settings: SettingsModule; telemetry: TelemetryModule },
): AgentModule {
  const { runtime } = platform;
  return createMetricsModule({
    snapshot: (ctx) => {
      const rt = runtime.runtime();
      const agent = fleet.agent;
      const latest = more.telemetry.board?.service?.latest();
      return {
        version: more.version,
        slots: rt?.slotStats() ?? [],
        distributions: rt?.slotMetrics() ?? [],
        queueDepths: workloads.queueDepths(),
        hosts: rt?.state().instances ?? [],
        ...(agent ? { outbox: agent.outbox.stats(), mqtt: { connected: agent.connected } } : {}),
        otaJobs: otaJobStates(ctx.db),
        ...(latest ? { telemetry: latest.metrics } : {}),
        ...(more.settings.service() ? { settingsRevision: more.settings.service()!.revision } : {}),
        toolCalls: workloads.assistant()?.stats.totals() ?? [],
      };
    },
    watch: (count) => {
      const out: Array<() => void> = [];
      const rt = runtime.runtime();
      if (rt) {
        out.push(rt.events.on('fallback', () => count('fallbacks')));
        out.push(rt.events.on('switch', () => count('swaps')));
      }
      let connections = 0;
      const agent = fleet.agent;
      if (agent) out.push(agent.events.on('connected', () => connections++ > 0 && count('reconnects')));
      return out;
    },
  });
}

/** Jobs in the OTA journal by state; none when the journal table is not there (OTA off). */
function otaJobStates(db: AgentContext['db']): Record<string, number> {
  try {
    const rows = db.prepare('SELECT state, COUNT(*) AS n FROM ota_jobs GROUP BY state').all() as Array<{
      state: string;
      n: number;
    }>;
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  } catch {
    return {};
  }
}
