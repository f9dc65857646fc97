import type { AgentConfig } from './config/schema.js';
import { type SlotsConfig, slotSpecsFromConfig } from './config/sections/slots.js';
import { resolveTelemetryConfig } from './config/sections/telemetry.js';
import type { DetectModule } from './detect/module.js';
import type { DocumentsModule } from './documents/module.js';
import type { FleetModule } from './fleet/module.js';
import type { DeviceIdentity } from './identity/device-identity.js';
import type { RuntimeModule } from './runtime/module.js';
import type { TelemetryModule } from './telemetry/module.js';
import type { WorkloadsModule } from './workloads/module.js';

// The reload path: what SIGHUP, the fleet's `reload` command and every run-time settings change go through.
// It re-reads what can change without a restart: the board (live detection), the slots (replan), the tags, the
// workloads' run-time keys (prompts, token limits, watch), the telemetry intervals and the Wyoming server.
// Keys that need a restart (agent/config/overlay-keys.ts) are left as the agent started with them.

export interface ReloadParts {
  detect: DetectModule;
  runtime: RuntimeModule;
  documents: DocumentsModule;
  fleet: FleetModule;
  telemetry: TelemetryModule;
  workloads: WorkloadsModule;
  identity: () => DeviceIdentity | undefined;
}

function sameTags(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i]);
}

export function createReloader(initial: AgentConfig, parts: ReloadParts) {
  let current = initial;
  return async (
    next: AgentConfig | undefined,
    reason: string,
    options: { detect?: boolean } = {},
  ): Promise<Record<string, unknown>> => {
    const { detect, runtime, documents, fleet, workloads } = parts;
    const rt = runtime.runtime();
    // A run-time settings change does not change the board: probing it again (tens of ms, synchronous) would
    // only delay the replan the user waits for. SIGHUP and the fleet's `reload` detect again.
    const source = options.detect === false ? undefined : detect.reload(next ?? current);
    const applied: Record<string, unknown> = {};
    if (next) {
      if (rt) await rt.configure(slotSpecsFromConfig(next['slots'] as SlotsConfig | undefined));
      // Tags are read where they are used (command selectors, presence), from the identity's own array.
      const identity = parts.identity();
      const tags = [...new Set(next.tags)];
      if (identity && !sameTags(identity.tags, tags)) {
        identity.tags.splice(0, identity.tags.length, ...tags);
        fleet.agent?.refreshPresence();
        applied['tags'] = tags;
      }
      const t = resolveTelemetryConfig(next['telemetry'] as Parameters<typeof resolveTelemetryConfig>[0]);
      if (parts.telemetry.board?.service?.setIntervals(t)) applied['telemetry'] = 'intervals changed';
      const w = await workloads.applySettings(next);
      if (w.wyoming !== 'unchanged') applied['wyoming'] = w.wyoming;
    }
    const placement = rt ? await rt.replan(reason) : undefined;
    documents.publishAll();
    if (next) current = next;
    return {
      reloaded: true,
      config: next ? 'slots and run-time settings re-read' : 'unchanged',
      ...(source !== undefined ? { capabilities: source } : {}),
      ...applied,
      ...(placement ? { revision: runtime.runtime()?.desired.revision().revision } : {}),
    };
  };
}

export type Reloader = ReturnType<typeof createReloader>;
