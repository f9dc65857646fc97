// The workloads' edges on the agent's router: the OpenAI-compatible API, the voice and vision sockets, the
// assistant's routes and the wake-word routes, all over the services the module built. Returns their removers.
import type { SessionLimiter } from '../http/session-limits.js';
import type { AgentContext, PublishEvent } from '../module.js';
import type { ApiModels } from './api-models.js';
import { registerOpenAiRoutes } from './openai/routes.js';
import type { frameDecoder, WorkloadServices } from './services.js';
import { registerVisionSocket } from './vision/socket.js';
import { registerVoiceSocket } from './voice/socket.js';
import { registerWakeRoutes } from './wake/routes.js';

export interface RouterEdgeOptions {
  /** Shared with the dashboard's own sockets, so one limit covers every live session. */
  sessions: SessionLimiter;
  messagesPerSecond: number;
  /** Watch-mode answers as device events. */
  publishEvent?: PublishEvent | undefined;
  maxFrameBytes: number;
  decode: ReturnType<typeof frameDecoder>;
}

export function registerRouterEdges(
  ctx: AgentContext,
  services: WorkloadServices,
  apiModels: () => ApiModels,
  options: RouterEdgeOptions,
): Array<() => void> {
  const { voice, vision } = services;
  const { sessions, messagesPerSecond, publishEvent, maxFrameBytes, decode } = options;
  return [
    registerOpenAiRoutes({
      router: ctx.router,
      models: apiModels,
      maxImageBytes: maxFrameBytes,
      decodeImage: decode,
      nowMs: () => ctx.clock.nowMs(),
      logger: ctx.logger.child('openai'),
    }),
    registerVoiceSocket({
      router: ctx.router,
      open: (id, overrides) => voice.open(id, overrides),
      describeStages: () => voice.describe(),
      sessions,
      messagesPerSecond,
      clock: ctx.clock,
      logger: ctx.logger,
    }),
    registerVisionSocket({
      router: ctx.router,
      vision,
      sessions,
      messagesPerSecond,
      clock: ctx.clock,
      logger: ctx.logger,
      ...(publishEvent ? { publish: (e: Record<string, unknown>) => publishEvent('vision.watch', e) } : {}),
    }),
    services.hub.registerRoutes(ctx.router, { maxBytes: maxFrameBytes, decode }),
    ...registerWakeRoutes({
      router: ctx.router,
      monitor: services.wakeMonitor,
      keywords: () => voice.wakeKeywords(),
      sessions,
      messagesPerSecond,
      clock: ctx.clock,
      ...(services.clips ? { clips: services.clips } : {}),
    }),
  ];
}
