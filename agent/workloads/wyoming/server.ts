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

export function createWyomingServer(deps: WyomingServerDeps): WyomingServer {
  const { config, logger } = deps;
  const log = logger.child('wyoming');
  const allow = allowList(config.allow);
  const secret = config.secret !== undefined ? digest(config.secret) : undefined;
  const conversations = new ConversationHistories(config.maxConversations, deps.maxHistoryMessages);
  const sockets = new Set<Socket>();
  let server: Server | undefined;

  const write = (socket: Socket, event: WyomingEvent): Promise<void> => {
    if (socket.destroyed || !socket.writable) return Promise.resolve();
    if (socket.write(encodeEvent(event))) return Promise.resolve();
    // Bounded output: the next event waits until the client has read this one.
    return new Promise((resolve) => {
      const done = () => {
        socket.off('drain', done);
        socket.off('close', done);
        resolve();
      };
      socket.once('drain', done);
      socket.once('close', done);
    });
  };

  /** Says why, then closes; the client sees one error event before the end of the stream. */
  const refuse = (socket: Socket, code: string, text: string) => {
    if (!socket.destroyed) socket.end(encodeEvent({ type: 'error', data: { text, code } }));
    // A client that does not read must not keep the socket half-open.
    setTimeout(() => socket.destroy(), 2000).unref();
  };

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
    socket.setNoDelay(true);
    const decoder = new WyomingDecoder(config);
    let authenticated = secret === undefined;
    const connection = new WyomingConnection({
      voice: deps.voice,
      conversations,
      systemPrompt: deps.systemPrompt,
      languages: config.languages,
      agentVersion: deps.agentVersion,
      maxTextChars: config.maxTextChars,
      maxAudioSeconds: config.maxAudioSeconds,
      asr: config.asr,
      ...(deps.priority ? { priority: deps.priority } : {}),
      send: (event) => write(socket, event),
      logger: log,
    });

    let idle: NodeJS.Timeout | undefined;
    const armIdle = () => {
      if (idle) clearTimeout(idle);
      idle = setTimeout(() => {
        if (connection.busy) return armIdle();
        refuse(socket, 'ETIMEDOUT', `No event for ${config.idleTimeoutS} s (wyoming.idleTimeoutS): closing`);
      }, config.idleTimeoutS * 1000);
      idle.unref();
    };
    armIdle();

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
      if (events.length > 0) armIdle();
      for (const event of events) {
        if (!authenticated) {
          if (!authenticate(event)) return;
          continue;
        }
        connection.handle(event);
      }
    });
    socket.on('error', (err) => log.debug('Wyoming socket error', { remote, error: err.message }));
    socket.on('close', () => {
      if (idle) clearTimeout(idle);
      sockets.delete(socket);
      connection.close();
      void connection.idle().finally(release);
    });
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
