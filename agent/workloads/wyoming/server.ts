// The Wyoming TCP server: accepts Home Assistant (or any Wyoming client), applies the limits before anything is
// parsed — the client allow-list, wyoming.maxConnections, the optional shared secret — then feeds each
// connection's bytes through the frame decoder into its WyomingConnection. Connections are counted apart from
// sessions: any accepted connection is answered `describe` (Home Assistant checks a service that way), and only
// a flow that runs model work claims one of the agent's live sessions (session-claim.ts), so idle Home
// Assistant connections cannot starve the dashboard. Every refusal is an `error` event with a code and a retry
// hint before the close, and is counted (stats(), in the workloads' telemetry); only a flood far past
// wyoming.maxConnections (ACCEPT_HEADROOM) is closed at accept without the event, counted apart as dropped. A
// frame error (bad JSON, a length over its limit, garbage) is answered with one `error` event and the connection
// is closed: the byte stream cannot be trusted after it. A connection that sends nothing for idleTimeoutS while
// no request of its runs is closed too.
import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, createServer, isIPv4, isIPv6, type Server, type Socket } from 'node:net';
import { errorMessage } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { WyomingConfig } from '../../config/sections/wyoming.js';
import type { SessionLimiter } from '../../http/session-limits.js';
import type { VoiceService } from '../voice/service.js';
import { encodeEvent, WyomingDecoder, type WyomingEvent } from './codec.js';
import { WyomingConnection } from './connection.js';
import { ConversationHistories } from './conversations.js';

export interface WyomingServerDeps {
  config: WyomingConfig;
  voice: Pick<VoiceService, 'roles' | 'asrStage' | 'replyStage' | 'ttsStage' | 'wakeStream'>;
  systemPrompt: string;
  maxHistoryMessages: number;
  sessions: SessionLimiter;
  priority?: { begin(): void; end(): void };
  agentVersion: string;
  logger: Logger;
}

export interface WyomingServer {
  /** Starts listening; resolves with the bound address (port 0 → the OS's choice). */
  listen(): Promise<{ address: string; port: number }>;
  /** The bound port while listening, else undefined. */
  readonly port: number | undefined;
  readonly connections: number;
  /** Open connections, the session each holds (if any), and the refusals so far. */
  stats(): WyomingStats;
  close(): Promise<void>;
}

export interface WyomingStats {
  connections: number;
  maxConnections: number;
  /** Connections holding a live session, by role. */
  sessions: Record<string, number>;
  /** Every connection refused for wyoming.maxConnections, with the `error` event or (see dropped) without. */
  refusedConnections: number;
  /** Of those, the ones closed at accept without the event: past the hard cap of a flood (ACCEPT_HEADROOM). */
  droppedConnections: number;
  refusedSessions: number;
}

/** What a client refused for the connection limit is told to wait before it tries again. */
const CONNECTION_RETRY_AFTER_S = 5;

/**
 * Connection refusals that may wait (at most 2 s) for their client to read the event and close first. Past this
 * many at once a refusal still gets its event, but the socket is closed as soon as the event is handed to the
 * kernel, so a flood costs no file descriptor beyond the moment of its accept.
 */
const REFUSALS_HELD_MAX = 256;

/**
 * Sockets open at once, past wyoming.maxConnections, before Node closes new ones at accept without a word (and
 * they are counted as dropped): the last guard of the process's file descriptors in a flood, far above any burst
 * a Home Assistant (or a few of them) opens, which all get the ECONNLIMIT event.
 */
const ACCEPT_HEADROOM = 1024;

/** The allow-list as a BlockList (addresses and CIDR ranges, IPv4 and IPv6); undefined: everyone may connect. */
export function allowList(entries: readonly string[], key = 'wyoming.allow'): BlockList | undefined {
  if (entries.length === 0) return undefined;
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', bits] = entry.split('/');
    const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
    if (!family) throw new RangeError(`${key}: ${JSON.stringify(entry)} is not an IP address or CIDR range`);
    if (bits === undefined) list.addAddress(address, family);
    else {
      const prefix = Number(bits);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 'ipv4' ? 32 : 128))
        throw new RangeError(`${key}: ${JSON.stringify(entry)} has an invalid prefix length`);
      list.addSubnet(address, prefix, family);
    }
  }
  return list;
}

export function clientAllowed(list: BlockList | undefined, remote: string | undefined): boolean {
  if (!list) return true;
  if (!remote) return false;
  // IPv4 clients of a dual-stack socket appear as ::ffff:a.b.c.d.
  const v4 = remote.startsWith('::ffff:') ? remote.slice(7) : undefined;
  if (v4 && isIPv4(v4)) return list.check(v4, 'ipv4');
  return list.check(remote, isIPv6(remote) ? 'ipv6' : 'ipv4');
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The connection's writer: each event is written at once; the promise resolves when the socket can take more
 * (one shared wait per backlog), so jobs that await it are paced by the client's reading.
 */
function eventWriter(socket: Socket): (event: WyomingEvent) => Promise<void> {
  let drained: Promise<void> | undefined;
  return (event) => {
    if (socket.destroyed || !socket.writable) return Promise.resolve();
    if (socket.write(encodeEvent(event))) return Promise.resolve();
    drained ??= new Promise<void>((resolve) => {
      const done = () => {
        socket.off('drain', done);
        socket.off('close', done);
        drained = undefined;
        resolve();
      };
      socket.on('drain', done);
      socket.on('close', done);
    });
    return drained;
  };
}

/**
 * Says why, then closes; the client sees one error event before the end of the stream. `hold: false` closes the
 * socket as soon as the event is written instead of waiting for the client's close.
 */
function refuse(socket: Socket, code: string, text: string, hold = true): void {
  const retry = /retry in (\d+) s/.exec(text);
  const data = { text, code, ...(retry ? { retry_after_s: Number(retry[1]) } : {}) };
  if (!socket.destroyed)
    socket.end(encodeEvent({ type: 'error', data }), hold ? undefined : () => socket.destroy());
  // A client that does not read must not keep the socket half-open.
  setTimeout(() => socket.destroy(), 2000).unref();
}

/** What every connection of one server shares. */
interface ServerShared {
  deps: WyomingServerDeps;
  log: Logger;
  secret: Buffer | undefined;
  conversations: ConversationHistories;
  refusedSessions: number;
  live: Set<WyomingConnection>;
}

/** Closes the connection when no event came for idleTimeoutS while none of its requests runs. */
function idleTimer(socket: Socket, seconds: number, busy: () => boolean) {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      if (busy()) return arm();
      refuse(socket, 'ETIMEDOUT', `No event for ${seconds} s (wyoming.idleTimeoutS): closing`);
    }, seconds * 1000);
    timer.unref();
  };
  arm();
  return { arm, stop: () => timer && clearTimeout(timer) };
}

/** One admitted connection: bytes → frames → its WyomingConnection, until either side closes. */
function serveConnection(socket: Socket, shared: ServerShared): void {
  const { deps, log, secret } = shared;
  const { config } = deps;
  const remote = socket.remoteAddress;
  const decoder = new WyomingDecoder(config);
  const connection = new WyomingConnection({
    voice: deps.voice,
    conversations: shared.conversations,
    systemPrompt: deps.systemPrompt,
    languages: config.languages,
    agentVersion: deps.agentVersion,
    maxTextChars: config.maxTextChars,
    maxAudioSeconds: config.maxAudioSeconds,
    asr: config.asr,
    ...(deps.priority ? { priority: deps.priority } : {}),
    send: eventWriter(socket),
    sessions: {
      acquire: (role) => deps.sessions.tryAcquire({ kind: `wyoming ${role}`, who: remote ?? 'unknown' }),
      refusal: () => deps.sessions.refusal(),
    },
    refuse: (code, text) => {
      shared.refusedSessions++;
      broken = true;
      socket.pause();
      log.info('Wyoming session refused: all live sessions are in use', { remote });
      refuse(socket, code, text);
    },
    logger: log,
  });
  shared.live.add(connection);
  const idle = idleTimer(socket, config.idleTimeoutS, () => connection.busy);
  let authenticated = secret === undefined;
  let broken = false;
  const authenticate = (event: WyomingEvent): boolean => {
    const given = event.data['secret'];
    if (event.type === 'auth' && typeof given === 'string' && timingSafeEqual(digest(given), secret!)) {
      authenticated = true;
      return true;
    }
    broken = true;
    refuse(
      socket,
      'EAUTH',
      'This Wyoming server needs a shared secret first: {"type":"auth","data":{"secret":"…"}}',
    );
    return false;
  };

  socket.on('data', (chunk: Buffer) => {
    if (broken) return;
    let events: WyomingEvent[];
    try {
      events = decoder.push(chunk);
    } catch (err) {
      broken = true;
      const code = (err as { code?: unknown }).code;
      log.info('Wyoming frame error: closing the connection', { remote, error: errorMessage(err) });
      socket.pause();
      refuse(socket, typeof code === 'string' ? code : 'EFRAME', errorMessage(err));
      return;
    }
    if (events.length > 0) idle.arm();
    for (const event of events) {
      if (authenticated) connection.handle(event);
      else if (!authenticate(event)) return;
    }
    // A client that sends requests without reading the answers stops being read until it does: what waits
    // for it stays bounded by the socket's buffer instead of growing with every ping or describe.
    if (socket.writableNeedDrain && !socket.isPaused()) {
      socket.pause();
      socket.once('drain', () => {
        if (!broken) socket.resume();
      });
    }
  });
  socket.on('error', (err) => log.debug('Wyoming socket error', { remote, error: err.message }));
  socket.on('close', () => {
    idle.stop();
    connection.close();
    void connection.idle().finally(() => {
      connection.close();
      shared.live.delete(connection);
    });
  });
}

export function createWyomingServer(deps: WyomingServerDeps): WyomingServer {
  const { config } = deps;
  const log = deps.logger.child('wyoming');
  const allow = allowList(config.allow);
  const shared: ServerShared = {
    deps,
    log,
    secret: config.secret !== undefined ? digest(config.secret) : undefined,
    conversations: new ConversationHistories(config.maxConversations, deps.maxHistoryMessages),
    refusedSessions: 0,
    live: new Set(),
  };
  let refusedConnections = 0;
  let droppedConnections = 0;
  /** Connection refusals whose socket is still open (waiting for the client to read and close). */
  let refusing = 0;
  const sockets = new Set<Socket>();
  let server: Server | undefined;

  const onConnection = (socket: Socket) => {
    const remote = socket.remoteAddress;
    if (!clientAllowed(allow, remote)) {
      log.info('Wyoming client refused: not in wyoming.allow', { remote });
      refuse(socket, 'EFORBIDDEN', `Client ${remote ?? 'unknown'} is not in wyoming.allow`);
      return;
    }
    if (sockets.size >= config.maxConnections) {
      refusedConnections++;
      log.info('Wyoming connection refused: wyoming.maxConnections reached', { remote });
      const hold = refusing < REFUSALS_HELD_MAX;
      refusing++;
      socket.once('close', () => refusing--);
      socket.on('error', () => {});
      // What the client sent meanwhile (Home Assistant's `describe`) is read and dropped: a close with unread
      // bytes would be a reset, which can cost the client the event.
      socket.resume();
      refuse(
        socket,
        'ECONNLIMIT',
        `Too many Wyoming connections: ${sockets.size} of ${config.maxConnections} are open ` +
          `(wyoming.maxConnections); retry in ${CONNECTION_RETRY_AFTER_S} s`,
        hold,
      );
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.setNoDelay(true);
    serveConnection(socket, shared);
  };

  return {
    get port() {
      const a = server?.address();
      return a && typeof a === 'object' ? a.port : undefined;
    },
    get connections() {
      return sockets.size;
    },
    stats() {
      const sessions: Record<string, number> = {};
      for (const c of shared.live) {
        const role = c.sessionRole();
        if (role) sessions[role] = (sessions[role] ?? 0) + 1;
      }
      return {
        connections: sockets.size,
        maxConnections: config.maxConnections,
        sessions,
        refusedConnections,
        droppedConnections,
        refusedSessions: shared.refusedSessions,
      };
    },
    listen() {
      server = createServer(onConnection);
      // Past wyoming.maxConnections every connection is accepted and answered ECONNLIMIT (onConnection); only a
      // flood past ACCEPT_HEADROOM more sockets at once is closed by Node at accept, without the event, counted.
      server.maxConnections = config.maxConnections + ACCEPT_HEADROOM;
      server.on('drop', () => {
        refusedConnections++;
        droppedConnections++;
      });
      const s = server;
      return new Promise((resolve, reject) => {
        s.once('error', reject);
        s.listen(config.port, config.bind, () => {
          s.off('error', reject);
          s.on('error', (err) => log.warn('Wyoming server error', { error: err.message }));
          const a = s.address();
          const bound =
            a && typeof a === 'object'
              ? { address: a.address, port: a.port }
              : { address: config.bind, port: config.port };
          log.info('Wyoming server listening', bound);
          resolve(bound);
        });
      });
    },
    async close() {
      const s = server;
      server = undefined;
      for (const socket of sockets) socket.destroy();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}
