// The Wyoming TCP server: accepts Home Assistant (or any Wyoming client), applies the limits before anything is
// parsed — the client allow-list, the agent's shared session limit (a connection counts as one live session,
// like a dashboard socket), the optional shared secret — then feeds each connection's bytes through the frame
// decoder into its WyomingConnection. A frame error (bad JSON, a length over its limit, garbage) is answered
// with one `error` event and the connection is closed: the byte stream cannot be trusted after it. A connection
// that sends nothing for idleTimeoutS while no request of its runs is closed too.
import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, createServer, isIPv4, isIPv6, type Server, type Socket } from 'node:net';
import { errorMessage } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { WyomingConfig } from '../../config/sections/wyoming.js';
import type { SessionLimiter } from '../../http/session-limits.js';
import type { VoiceService } from '../voice/service.js';
import { encodeEvent, WyomingDecoder, type WyomingEvent } from './codec.js';
import { WyomingConnection } from './connection.js';
import { ConversationHistories } from './conversations.js';

export interface WyomingServerDeps {
  config: WyomingConfig;
  voice: Pick<VoiceService, 'roles' | 'asrStage' | 'replyStage' | 'ttsStage'>;
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
  close(): Promise<void>;
}

/** The allow-list as a BlockList (addresses and CIDR ranges, IPv4 and IPv6); undefined: everyone may connect. */
export function allowList(entries: readonly string[]): BlockList | undefined {
  if (entries.length === 0) return undefined;
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', bits] = entry.split('/');
    const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
    if (!family)
      throw new RangeError(`wyoming.allow: ${JSON.stringify(entry)} is not an IP address or CIDR range`);
    if (bits === undefined) list.addAddress(address, family);
    else {
      const prefix = Number(bits);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 'ipv4' ? 32 : 128))
        throw new RangeError(`wyoming.allow: ${JSON.stringify(entry)} has an invalid prefix length`);
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

/** Says why, then closes; the client sees one error event before the end of the stream. */
function refuse(socket: Socket, code: string, text: string): void {
  if (!socket.destroyed) socket.end(encodeEvent({ type: 'error', data: { text, code } }));
  // A client that does not read must not keep the socket half-open.
  setTimeout(() => socket.destroy(), 2000).unref();
}

/** What every connection of one server shares. */
interface ServerShared {
  deps: WyomingServerDeps;
  log: Logger;
  secret: Buffer | undefined;
  conversations: ConversationHistories;
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
function serveConnection(socket: Socket, shared: ServerShared, release: () => void): void {
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
    logger: log,
  });
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
    void connection.idle().finally(release);
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
  };
  const sockets = new Set<Socket>();
  let server: Server | undefined;

  const onConnection = (socket: Socket) => {
    const remote = socket.remoteAddress;
    if (!clientAllowed(allow, remote)) {
      log.info('Wyoming client refused: not in wyoming.allow', { remote });
      refuse(socket, 'EFORBIDDEN', `Client ${remote ?? 'unknown'} is not in wyoming.allow`);
      return;
    }
    const release = deps.sessions.tryAcquire();
    if (!release) {
      refuse(socket, 'EBUSY', deps.sessions.refusal());
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.setNoDelay(true);
    serveConnection(socket, shared, release);
  };

  return {
    get port() {
      const a = server?.address();
      return a && typeof a === 'object' ? a.port : undefined;
    },
    get connections() {
      return sockets.size;
    },
    listen() {
      server = createServer(onConnection);
      server.maxConnections = deps.sessions.limit * 4;
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
