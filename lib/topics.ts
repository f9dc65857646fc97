// The topic tree of the MQTT contract (docs/PROTOCOL.md). Every topic the agent uses is built here, so the
// contract, the ACL example and the code cannot drift apart silently.

export const TOPIC_PREFIX = 'mnn-edge';
export const FLEET_SEGMENT = 'fleet';

/** Retained documents republished on change. */
export const DOCUMENT_KINDS = ['capabilities', 'placement', 'models', 'config'] as const;
export type DocumentKind = (typeof DOCUMENT_KINDS)[number];

const DEVICE_ID = /^[A-Za-z0-9_.:-]{1,64}$/;
export const COMMAND_NAME = /^[a-z][a-z0-9-]{0,47}$/;

export function isValidDeviceId(id: string): boolean {
  return DEVICE_ID.test(id) && id !== FLEET_SEGMENT;
}

// A device id becomes one topic segment, the same in every topic: its MQTT root, its Home Assistant discovery
// topic (whose object ids allow only [A-Za-z0-9_-]) and the broker username the ACL example matches with %u.
// `.` and `:` are written `_2E` and `_3A`, and a `_` that would read as such an escape is written `_5F`;
// every other id (letters, digits, `-`, `_`) is its own segment. The mapping is one-to-one, so two devices
// never share a segment, and `deviceIdOfSegment` reverses it.
const ESCAPED: Record<string, string> = { '.': '_2E', ':': '_3A', _: '_5F' };
const ESCAPE = /_([0-9A-F]{2})/y;

/** The topic segment of a device id (see above); throws for an id outside the contract. */
export function topicSegment(deviceId: string): string {
  assertDeviceId(deviceId);
  let out = '';
  for (let i = 0; i < deviceId.length; i++) {
    const c = deviceId[i]!;
    if (c === '.' || c === ':') out += ESCAPED[c];
    else if (c === '_' && /^[0-9A-F]{2}/.test(deviceId.slice(i + 1, i + 3))) out += ESCAPED['_'];
    else out += c;
  }
  return out;
}

/** The device id a topic segment stands for; undefined when no valid id maps to it. */
export function deviceIdOfSegment(segment: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,192}$/.test(segment)) return undefined;
  let out = '';
  for (let i = 0; i < segment.length; ) {
    ESCAPE.lastIndex = i;
    const m = ESCAPE.exec(segment);
    if (m) {
      out += String.fromCharCode(Number.parseInt(m[1]!, 16));
      i += 3;
    } else out += segment[i++];
  }
  return isValidDeviceId(out) && topicSegment(out) === segment ? out : undefined;
}

function assertDeviceId(deviceId: string): void {
  if (!isValidDeviceId(deviceId))
    throw new Error(
      `Invalid device id ${JSON.stringify(deviceId)}: expected 1-64 of A-Z a-z 0-9 _ . : - (not "fleet")`,
    );
}

export interface DeviceTopics {
  /** The device id as it appears in topics (`topicSegment`). */
  segment: string;
  root: string;
  status: string;
  telemetry: string;
  events: string;
  document(kind: DocumentKind): string;
  /** Subscription for this device's commands. */
  commandFilter: string;
  command(name: string): string;
  /** Where responses go when the request names no usable response topic. */
  responses: string;
  ota(sub: string): string;
}

export function deviceTopics(deviceId: string): DeviceTopics {
  const segment = topicSegment(deviceId);
  const root = `${TOPIC_PREFIX}/${segment}`;
  return {
    segment,
    root,
    status: `${root}/status`,
    telemetry: `${root}/telemetry`,
    events: `${root}/events`,
    document: (kind) => `${root}/${kind}`,
    commandFilter: `${root}/cmd/+`,
    command: (name) => `${root}/cmd/${name}`,
    responses: `${root}/responses`,
    ota: (sub) => `${root}/ota/${sub}`,
  };
}

export const fleetTopics = {
  commandFilter: `${TOPIC_PREFIX}/${FLEET_SEGMENT}/cmd/+`,
  command: (name: string) => `${TOPIC_PREFIX}/${FLEET_SEGMENT}/cmd/${name}`,
  /** Operators read every device's status (and retained documents) with these filters. */
  allStatus: `${TOPIC_PREFIX}/+/status`,
  allTelemetry: `${TOPIC_PREFIX}/+/telemetry`,
  allDocuments: DOCUMENT_KINDS.map((k) => `${TOPIC_PREFIX}/+/${k}`),
};

export type CommandTarget = { scope: 'device'; name: string } | { scope: 'fleet'; name: string };

/** Classifies a command topic this device subscribed to; undefined for anything else. */
export function parseCommandTopic(deviceId: string, topic: string): CommandTarget | undefined {
  const parts = topic.split('/');
  if (parts.length !== 4 || parts[0] !== TOPIC_PREFIX || parts[2] !== 'cmd') return undefined;
  const name = parts[3]!;
  if (parts[1] === topicSegment(deviceId)) return { scope: 'device', name };
  if (parts[1] === FLEET_SEGMENT) return { scope: 'fleet', name };
  return undefined;
}

/** `mnn-edge/<segment>/<leaf>` → device id, for operator tools reading many devices. */
export function deviceIdOf(topic: string): string | undefined {
  const parts = topic.split('/');
  return parts.length >= 3 && parts[0] === TOPIC_PREFIX && parts[1] !== FLEET_SEGMENT
    ? deviceIdOfSegment(parts[1]!)
    : undefined;
}

/**
 * Devices may publish only under their own root (see docs/mosquitto-acl.example), so a response goes to the
 * requested topic only when it lies under `<root>/responses`. Fleet requests name one topic for all devices:
 * `mnn-edge/+/responses/…`, where each device puts its own id in place of the `+`.
 */
export function resolveResponseTopic(deviceId: string, requested: string): string | undefined {
  const own = deviceTopics(deviceId).responses;
  const fleetPattern = `${TOPIC_PREFIX}/+/responses`;
  let topic = requested;
  if (requested === fleetPattern || requested.startsWith(`${fleetPattern}/`))
    topic = own + requested.slice(fleetPattern.length);
  if (topic !== own && !topic.startsWith(`${own}/`)) return undefined;
  if (topic.includes('+') || topic.includes('#') || topic.includes('\0') || topic.length > 512)
    return undefined;
  return topic;
}
