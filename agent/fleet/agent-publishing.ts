import type { Clock } from '../../lib/clock.js';
import type { DeviceTopics, DocumentKind } from '../../lib/topics.js';
import type { AgentConnection } from './agent-connection.js';
import {
  buildHaDiscovery,
  type HaDeviceConfig,
  type HaModelSlot,
  type HaSlot,
  haDiscoveryTopic,
  haRemovals,
} from './ha-discovery.js';
import {
  type BoardInfo,
  type DocumentMessage,
  type EventMessage,
  encode,
  PROTOCOL_VERSION,
} from './protocol.js';

// What the fleet agent publishes besides telemetry: the retained state documents, events (kept in memory while
// offline), and the Home Assistant discovery config. Each is republished on every (re)connection.

const MAX_QUEUED_EVENTS = 100;

/** The retained documents (capabilities, placement, models): the last of each, republished on reconnect. */
export class RetainedDocuments {
  readonly #documents = new Map<DocumentKind, { json: string; ts: number }>();

  constructor(
    private readonly deviceId: string,
    private readonly topics: DeviceTopics,
    private readonly connection: AgentConnection,
    private readonly clock: Clock,
  ) {}

  /** Unchanged data is not republished. */
  set(kind: DocumentKind, data: Record<string, unknown>): void {
    const now = this.clock.nowMs();
    const json = encode('document', {
      v: PROTOCOL_VERSION,
      deviceId: this.deviceId,
      ts: now,
      data,
    } satisfies DocumentMessage);
    const same = this.#documents.get(kind);
    if (same && JSON.stringify(JSON.parse(same.json).data) === JSON.stringify(data)) return;
    this.#documents.set(kind, { json, ts: now });
    this.#publish(kind);
  }

  republishAll(): void {
    for (const kind of this.#documents.keys()) this.#publish(kind);
  }

  /** The documents as last published, for `get-state`. */
  snapshot(): Record<string, unknown> {
    return Object.fromEntries([...this.#documents].map(([k, d]) => [k, JSON.parse(d.json)]));
  }

  #publish(kind: DocumentKind): void {
    const doc = this.#documents.get(kind);
    if (doc) this.connection.publishSafe(this.topics.document(kind), doc.json, { qos: 1, retain: true });
  }
}

/** Device events, QoS 1; while offline the last MAX_QUEUED_EVENTS wait in memory for the next connection. */
export class EventPublisher {
  readonly #queued: EventMessage[] = [];

  constructor(
    private readonly deviceId: string,
    private readonly topics: DeviceTopics,
    private readonly connection: AgentConnection,
    private readonly clock: Clock,
  ) {}

  publish(type: string, data?: Record<string, unknown>): void {
    const e: EventMessage = {
      v: PROTOCOL_VERSION,
      deviceId: this.deviceId,
      ts: this.clock.nowMs(),
      type,
      ...(data ? { data } : {}),
    };
    const payload = encode('event', e);
    if (this.connection.connected) this.connection.publishSafe(this.topics.events, payload, { qos: 1 });
    else {
      this.#queued.push(e);
      if (this.#queued.length > MAX_QUEUED_EVENTS) this.#queued.shift();
    }
  }

  /** Sends what queued up while offline, oldest first. */
  flush(): void {
    for (const e of this.#queued.splice(0))
      this.connection.publishSafe(this.topics.events, encode('event', e), { qos: 1 });
  }
}

export interface HomeAssistantSources {
  deviceId: string;
  agentVersion: string;
  board: () => BoardInfo | undefined;
  /** Slots and their `variant@backend` choices, for Home Assistant selects. */
  slots?: () => readonly HaSlot[];
  /** The model select's choices per slot (installed models whose task fits, `none`). */
  modelSlots?: () => readonly HaModelSlot[];
  /** The metric names of the latest telemetry snapshot (thermal zones become sensors). */
  metricNames: () => readonly string[];
}

/** Home Assistant discovery: one device config, announced again when its entities change. */
export class HomeAssistantAnnouncer {
  // What Home Assistant was last told: the config (to remove entities that went away) and its shape.
  #announced: HaDeviceConfig | undefined;
  #announcedShape = '';

  constructor(
    private readonly sources: HomeAssistantSources,
    private readonly connection: AgentConnection,
  ) {}

  announce(): void {
    if (!this.connection.connected) return;
    const { deviceId, agentVersion } = this.sources;
    const board = this.sources.board();
    const { tempMetrics, slots, modelSlots, shape } = this.#input();
    const discovery = buildHaDiscovery({
      deviceId,
      agentVersion,
      ...(board?.model ? { model: board.model } : {}),
      ...(board?.soc ? { hwVersion: board.soc } : {}),
      temperatureMetrics: tempMetrics,
      slots,
      modelSlots,
    });
    const payload = { ...discovery, cmps: { ...discovery.cmps, ...haRemovals(this.#announced, discovery) } };
    this.#announced = discovery;
    this.#announcedShape = shape;
    this.connection.publishSafe(haDiscoveryTopic(deviceId), JSON.stringify(payload), {
      qos: 1,
      retain: true,
    });
  }

  /** Thermal zones are known only once sampled, slots come and go with the placement: announce on a change. */
  announceIfChanged(): void {
    if (this.#input().shape !== this.#announcedShape && this.connection.connected) this.announce();
  }

  #input() {
    const tempMetrics = this.sources.metricNames().filter((m) => m.startsWith('temp.'));
    const slots = this.sources.slots?.() ?? [];
    // Installed and removed models change the selects' options: part of the shape, announced again.
    const modelSlots = this.sources.modelSlots?.() ?? [];
    const shape = [
      tempMetrics.join(','),
      slots.map((x) => `${x.name}:${x.backends.join('/')}`).join(','),
      modelSlots.map((m) => `${m.slot}:${m.options.join('/')}`).join(','),
    ].join('|');
    return { tempMetrics, slots, modelSlots, shape };
  }
}
