import type { Clock } from '../lib/clock.js';
import type { EventBus } from '../lib/event-bus.js';
import type { Logger } from '../lib/log.js';
import type { Db, KvStore } from '../lib/sqlite/database.js';
import type { TypedEventEmitter } from '../lib/typed-events.js';
import type { AgentConfig } from './config/schema.js';
import type { HttpRouter } from './http/router.js';
import type { DeviceIdentity } from './identity/device-identity.js';
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

/**
 * The events modules send each other through the agent's bus (compose.ts creates it): a module emits what it
 * knows, the modules that care listen under their own name, and their listeners go when they stop.
 */
export type ModuleEvents = {
  /** The runtime planned a new placement (heard before its device event goes out). */
  'runtime.placement': { revision: number; reason: string };
  /** What serves a slot may have changed without a new placement (loaded, failed, fell back, host exit). */
  'runtime.slot-change': { event: string };
  /** A device event for MQTT `events` (the fleet sends it while connected). */
  'device.event': { type: string; data: Record<string, unknown> };
  /** The configuration the run-time settings run on now: at their start, at a change (before it is applied), at
   *  its rollback and at a re-read. Until the first, the configuration the agent started with is what runs. */
  'settings.config': { config: AgentConfig };
};

export type AgentBus = EventBus<ModuleEvents>;
