// The Wyoming server as part of the workloads module: started with the voice service when `wyoming.enabled`
// (the image's config), over the same voice stages, session limit and voice priority as the dashboard's sessions.

import { errorMessage } from '../../../lib/errors.js';
import { deepMerge } from '../../config/load.js';
import type { VoiceConfig } from '../../config/sections/voice.js';
import { type WyomingConfig, wyomingDefaults } from '../../config/sections/wyoming.js';
import type { SessionLimiter } from '../../http/session-limits.js';
import type { AgentContext } from '../../module.js';
import type { VoiceService } from '../voice/service.js';
import { createWyomingServer, type WyomingServer, type WyomingStats } from './server.js';

export function resolveWyomingConfig(section: unknown): WyomingConfig {
  return deepMerge(wyomingDefaults, section ?? {});
}

export interface WyomingStart {
  ctx: AgentContext;
  voice: VoiceService;
  voiceConfig: VoiceConfig;
  sessions: SessionLimiter;
  priority: { begin(): void; end(): void };
  agentVersion: string;
}

/** The listening server, or undefined when the configuration leaves it off or its port cannot be bound. */
export async function startWyoming(o: WyomingStart): Promise<WyomingServer | undefined> {
  const config = resolveWyomingConfig(o.ctx.config['wyoming']);
  if (!config.enabled) return undefined;
  const server = createWyomingServer({
    config,
    voice: o.voice,
    systemPrompt: o.voiceConfig.systemPrompt,
    maxHistoryMessages: o.voiceConfig.maxHistoryMessages,
    sessions: o.sessions,
    priority: o.priority,
    agentVersion: o.agentVersion,
    logger: o.ctx.logger,
  });
  try {
    await server.listen();
  } catch (err) {
    // An optional service: the dashboard and the board's own voice loop still run, and nothing is announced.
    o.ctx.logger.error('Wyoming server not started: cannot listen', {
      bind: config.bind,
      port: config.port,
      error: errorMessage(err),
    });
    await server.close();
    return undefined;
  }
  return server;
}

/** Whether it should be announced as `_wyoming._tcp`: listening, and `wyoming.mdns` on. */
export function wyomingAnnounced(ctx: Pick<AgentContext, 'config'>): boolean {
  return resolveWyomingConfig(ctx.config['wyoming']).mdns;
}

/** The mDNS module's extra services for the workloads: `_wyoming._tcp` on the server's port while it listens. */
export function wyomingMdnsServices(workloads: {
  wyomingAnnouncement(): { port: number } | undefined;
}): Array<{ type: string; port: number }> {
  const w = workloads.wyomingAnnouncement();
  return w ? [{ type: '_wyoming._tcp', port: w.port }] : [];
}

/**
 * The server's telemetry gauges: connections and sessions open now, and the refusals since start as counters,
 * so the fleet sees Home Assistant being turned away as the numbers grow.
 */
export function wyomingGauges(stats: WyomingStats | undefined): Record<string, number> {
  if (!stats) return {};
  return {
    'workload.wyoming.connections': stats.connections,
    'workload.wyoming.sessions': Object.values(stats.sessions).reduce((a, n) => a + n, 0),
    'workload.wyoming.refused_connections': stats.refusedConnections,
    'workload.wyoming.dropped_connections': stats.droppedConnections,
    'workload.wyoming.refused_sessions': stats.refusedSessions,
  };
}
