import { createSocket, type Socket } from 'node:dgram';
import { networkInterfaces } from 'node:os';
import type { Logger } from '../../lib/log.js';
import {
  DnsFormatError,
  decodeMessage,
  encodeResponse,
  type Question,
  type ResourceRecord,
  TYPE,
} from './dns-packet.js';

// A minimal DNS-SD responder (RFC 6762/6763) for the agent's own services on one host: the HTTP dashboard as
// `_http._tcp` and, when it listens, the Wyoming voice server as `_wyoming._tcp` (Home Assistant's discovery).
// It answers PTR/SRV/TXT/A/AAAA questions about them, announces twice at start (and on request) and says
// goodbye (TTL 0) at stop. It does not probe for name conflicts: the instance name carries the device id,
// which is unique per device, and the host name is the system's own.

export const MDNS_GROUP = '224.0.0.251';
export const MDNS_PORT = 5353;
const DEFAULT_TYPE = '_http._tcp';
const SERVICES_META = '_services._dns-sd._udp.local';
/** RFC 6762 §10: 120 s for records naming a host, 75 minutes for the others. */
const HOST_TTL = 120;
const OTHER_TTL = 4500;

export interface MdnsServiceInfo {
  /** DNS-SD service type without `.local`, e.g. `_wyoming._tcp`; default `_http._tcp`. */
  type?: string;
  /** Instance label, e.g. "mnn-edge 3f2a (Radxa ROCK 5B)"; dots are replaced, length capped at 63 bytes. */
  instance: string;
  /** Host label without ".local". */
  host: string;
  port: number;
  txt: Record<string, string>;
}

export interface MdnsTransport {
  send(packet: Buffer, port: number, address: string): void;
  close(): Promise<void>;
}

export interface MdnsResponderOptions {
  /** The services, all on this host (the first one's host name is used for every one). */
  services: readonly MdnsServiceInfo[];
  /** IPv4 and IPv6 addresses to answer with; default: every non-internal interface address. */
  addresses?: () => string[];
  /**
   * Where the socket listens and where announcements go. Default: 0.0.0.0:5353 joined to 224.0.0.251.
   * Tests bind 127.0.0.1:0 without multicast and point announcements at their own socket.
   */
  socket?: { bind: string; port: number; multicast: boolean; announceTo?: { address: string; port: number } };
  logger: Logger;
}

export interface MdnsResponder {
  start(): Promise<void>;
  /** Send the unsolicited announcement again (e.g. after the address or port changed). */
  announce(): void;
  /** Goodbye packet, then close. Idempotent. */
  stop(): Promise<void>;
  /** The bound UDP port (5353 unless configured otherwise). */
  readonly port: number;
}

export function sanitizeLabel(text: string): string {
  let label = text.replace(/\./g, '-').replace(/\s+/g, ' ').trim();
  while (Buffer.byteLength(label, 'utf8') > 63) label = label.slice(0, -1);
  return label.length > 0 ? label : 'mnn-edge';
}

export function defaultAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal) continue;
      // Link-local IPv6 needs a scope the answer cannot carry; IPv4 and global IPv6 are enough to connect.
      if (a.family === 'IPv6' && a.address.toLowerCase().startsWith('fe80')) continue;
      out.push(a.address);
    }
  }
  return out;
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The records one service owns (PTR, SRV, TXT), its answers to one question, and its part of an announcement. */
function serviceZone(service: MdnsServiceInfo, hostName: string) {
  const type = `${service.type ?? DEFAULT_TYPE}.local`;
  const instanceName = `${service.instance}.${type}`;
  const ptr = (ttl: number): ResourceRecord => ({
    type: TYPE.PTR,
    name: type,
    target: instanceName,
    ttl,
    cacheFlush: false,
  });
  const meta = (ttl: number): ResourceRecord => ({
    type: TYPE.PTR,
    name: SERVICES_META,
    target: type,
    ttl,
    cacheFlush: false,
  });
  const srv = (ttl: number): ResourceRecord => ({
    type: TYPE.SRV,
    name: instanceName,
    priority: 0,
    weight: 0,
    port: service.port,
    target: hostName,
    ttl,
    cacheFlush: true,
  });
  const txt = (ttl: number): ResourceRecord => ({
    type: TYPE.TXT,
    name: instanceName,
    entries: Object.entries(service.txt).map(([k, v]) => `${k}=${v}`),
    ttl,
    cacheFlush: true,
  });

  /** Answers for one question (the host's addresses are added by the caller), or undefined. */
  const answer = (
    q: Question,
  ): { answers: ResourceRecord[]; additionals: ResourceRecord[]; wantsHost: boolean } | undefined => {
    const any = q.type === TYPE.ANY;
    if (same(q.name, SERVICES_META) && (any || q.type === TYPE.PTR))
      return { answers: [meta(OTHER_TTL)], additionals: [], wantsHost: false };
    if (same(q.name, type) && (any || q.type === TYPE.PTR)) {
      return { answers: [ptr(OTHER_TTL)], additionals: [srv(HOST_TTL), txt(OTHER_TTL)], wantsHost: true };
    }
    if (same(q.name, instanceName)) {
      const answers = [
        ...(any || q.type === TYPE.SRV ? [srv(HOST_TTL)] : []),
        ...(any || q.type === TYPE.TXT ? [txt(OTHER_TTL)] : []),
      ];
      return answers.length > 0 ? { answers, additionals: [], wantsHost: q.type !== TYPE.TXT } : undefined;
    }
    return undefined;
  };

  const records = (ttl: number) => [ptr(ttl), meta(ttl), srv(ttl > 0 ? HOST_TTL : 0), txt(ttl)];

  return { instanceName, answer, records };
}

/** Every service's records on one host, and the host's own address records. */
function hostZone(services: readonly MdnsServiceInfo[], host: string, addresses: () => string[]) {
  const hostName = `${host}.local`;
  const zones = services.map((s) => serviceZone(s, hostName));
  const hostRecords = (ttl: number): ResourceRecord[] =>
    addresses().map((address) =>
      address.includes(':')
        ? { type: TYPE.AAAA, name: hostName, address, ttl, cacheFlush: true }
        : { type: TYPE.A, name: hostName, address, ttl, cacheFlush: true },
    );

  const answer = (q: Question): { answers: ResourceRecord[]; additionals: ResourceRecord[] } | undefined => {
    if (same(q.name, hostName)) {
      const answers = hostRecords(HOST_TTL).filter((r) => q.type === TYPE.ANY || r.type === q.type);
      return answers.length > 0 ? { answers, additionals: [] } : undefined;
    }
    const found = zones.map((z) => z.answer(q)).filter((a) => a !== undefined);
    if (found.length === 0) return undefined;
    const answers = found.flatMap((a) => a.answers);
    const additionals = found.flatMap((a) => a.additionals);
    if (found.some((a) => a.wantsHost)) additionals.push(...hostRecords(HOST_TTL));
    // The meta PTR of two services of one type would repeat: keep one of each.
    const unique = (rs: ResourceRecord[]) =>
      rs.filter((r, i) => rs.findIndex((o) => JSON.stringify(o) === JSON.stringify(r)) === i);
    return { answers: unique(answers), additionals: unique(additionals) };
  };

  const announcement = (ttl: number) =>
    encodeResponse({
      answers: [...zones.flatMap((z) => z.records(ttl)), ...hostRecords(ttl > 0 ? HOST_TTL : 0)],
    });

  return { instanceNames: zones.map((z) => z.instanceName), hostName, answer, announcement };
}

export function createMdnsResponder(options: MdnsResponderOptions): MdnsResponder {
  const { logger } = options;
  const sock = options.socket ?? { bind: '0.0.0.0', port: MDNS_PORT, multicast: true };
  if (options.services.length === 0) throw new RangeError('An mDNS responder needs at least one service');
  const services = options.services.map((s) => ({ ...s, instance: sanitizeLabel(s.instance) }));
  const { instanceNames, hostName, answer, announcement } = hostZone(
    services,
    sanitizeLabel(options.services[0]!.host),
    options.addresses ?? defaultAddresses,
  );
  let socket: Socket | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped: Promise<void> | undefined;

  const announceTarget = () => sock.announceTo ?? { address: MDNS_GROUP, port: MDNS_PORT };

  const send = (packet: Buffer, port: number, address: string) => {
    socket?.send(packet, port, address, (err) => {
      if (err) logger.debug('mdns send failed', { err, address, port });
    });
  };

  const onMessage = (packet: Buffer, from: { address: string; port: number }) => {
    let message: ReturnType<typeof decodeMessage>;
    try {
      message = decodeMessage(packet);
    } catch (err) {
      if (err instanceof DnsFormatError)
        logger.debug('ignoring malformed mdns packet', { from: from.address, error: err.message });
      return;
    }
    if (message.isResponse) return;
    const answers: ResourceRecord[] = [];
    const additionals: ResourceRecord[] = [];
    const asked: Question[] = [];
    let unicast = false;
    for (const q of message.questions) {
      const a = answer(q);
      if (!a) continue;
      asked.push(q);
      answers.push(...a.answers);
      additionals.push(
        ...a.additionals.filter((x) => !answers.some((y) => y.type === x.type && y.name === x.name)),
      );
      unicast ||= q.unicastResponse;
    }
    if (answers.length === 0) return;
    // A query from a port other than 5353 is a "legacy" resolver expecting a classic unicast DNS reply.
    const legacy = from.port !== MDNS_PORT;
    const reply = encodeResponse({
      ...(legacy ? { id: message.id, questions: asked } : {}),
      answers,
      additionals,
    });
    if (legacy || unicast || !sock.multicast) send(reply, from.port, from.address);
    else send(reply, MDNS_PORT, MDNS_GROUP);
  };

  return {
    get port() {
      const addr = socket?.address();
      return addr ? addr.port : 0;
    },
    async start() {
      socket = createSocket({ type: 'udp4', reuseAddr: true });
      socket.on('message', (msg, rinfo) => onMessage(msg, rinfo));
      socket.on('error', (err) => logger.warn('mdns socket error', { err }));
      await new Promise<void>((resolve, reject) => {
        socket!.once('error', reject);
        socket!.bind(sock.port, sock.bind, () => {
          socket!.off('error', reject);
          resolve();
        });
      });
      if (sock.multicast) {
        socket.addMembership(MDNS_GROUP);
        socket.setMulticastTTL(255);
        socket.setMulticastLoopback(true);
      }
      logger.info('announcing on mDNS', {
        instances: instanceNames,
        host: hostName,
        ports: services.map((s) => s.port),
      });
      this.announce();
    },
    announce() {
      // RFC 6762 §8.3: at least two announcements, one second apart.
      const { address, port } = announceTarget();
      send(announcement(OTHER_TTL), port, address);
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => send(announcement(OTHER_TTL), port, address), 1000);
      timer.unref();
    },
    stop() {
      stopped ??= (async () => {
        if (timer) clearTimeout(timer);
        const s = socket;
        if (!s) return;
        const { address, port } = announceTarget();
        await new Promise<void>((resolve) => s.send(announcement(0), port, address, () => resolve()));
        await new Promise<void>((resolve) => s.close(() => resolve()));
        socket = undefined;
      })();
      return stopped;
    },
  };
}
