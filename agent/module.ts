import type { Clock } from './common/clock.js';
import type { Logger } from './common/log.js';
import type { TypedEventEmitter } from './common/typed-events.js';
import type { AgentConfig } from './config/schema.js';
import type { HttpRouter } from './http/router.js';
import type { DeviceIdentity } from './identity/device-identity.js';
import type { Db, KvStore } from './store/sqlite/database.js';
import type { TrustedTime } from './time/trusted-time.js';

// The contract between the agent's core (main.ts) and its feature modules (compose.ts lists them). It sits
// at the bottom so features depend on it, never on the composition root that starts them.

export type AgentEvents = {
  started: { port: number; address: string; deviceId: string };
  stopping: { reason: string };
  stopped: { reason: string };
  /** Emitted once when the clock first reports NTP synchronisation (modules re-check certificates, schedules). */
  'clock.synchronized': { wallMs: number };
};

/** What a module gets at start: the agent's shared services. */
export interface AgentContext {
  config: AgentConfig;
  logger: Logger;
  db: Db;
  kv: KvStore;
  router: HttpRouter;
  events: TypedEventEmitter<AgentEvents>;
  identity: DeviceIdentity;
  time: TrustedTime;
  clock: Clock;
}

export interface AgentModule {
  /** Used as the logger namespace and in start/stop errors. */
  name: string;
  start(ctx: AgentContext): void | Promise<void>;
  stop?(): void | Promise<void>;
}

/**
 * A handle one module gives another: read when needed, undefined until the module behind it has started (or
 * after it stopped), so modules never hold each other's state across a restart of the agent.
 */
export type Handle<T> = () => T | undefined;

/** A device event for the fleet (MQTT `events`); a no-op until the fleet is connected. */
export type PublishEvent = (type: string, data: Record<string, unknown>) => void;
