import { createSocket } from 'node:dgram';
import { networkInterfaces } from 'node:os';
import { DnsFormatError, decodeMessage, encodeResponse, TYPE, } from './dns-packet.js';
// A minimal DNS-SD responder (RFC 6762/6763) for one service: the agent's HTTP dashboard as `_http._tcp`.
// It answers PTR/SRV/TXT/A/AAAA questions about itself, announces twice at start (and on request) and says
// goodbye (TTL 0) at stop. It does not probe for name conflicts: the instance name carries the device id,
// which is unique per device, and the host name is the system's own.
export const MDNS_GROUP = '224.0.0.251';
export const MDNS_PORT = 5353;
const SERVICE = '_http._tcp.local';
const SERVICES_META = '_services._dns-sd._udp.local';
/** RFC 6762 §10: 120 s for records naming a host, 75 minutes for the others. */
const HOST_TTL = 120;
const OTHER_TTL = 4500;
export function sanitizeLabel(text) {
    let label = text.replace(/\./g, '-').replace(/\s+/g, ' ').trim();
    while (Buffer.byteLength(label, 'utf8') > 63)
        label = label.slice(0, -1);
    return label.length > 0 ? label : 'mnn-edge';
}
export function defaultAddresses() {
    const out = [];
    for (const list of Object.values(networkInterfaces())) {
        for (const a of list ?? []) {
            if (a.internal)
                continue;
            // Link-local IPv6 needs a scope the answer cannot carry; IPv4 and global IPv6 are enough to connect.
            if (a.family === 'IPv6' && a.address.toLowerCase().startsWith('fe80'))
                continue;
            out.push(a.address);
        }
    }
    return out;
}
const same = (a, b) => a.toLowerCase() === b.toLowerCase();
/** The records this responder owns (service, instance, host), its answers to one question, its announcement. */
function serviceZone(service, addresses) {
    const instanceName = `${service.instance}.${SERVICE}`;
    const hostName = `${service.host}.local`;
    const ptr = (ttl) => ({
        type: TYPE.PTR,
        name: SERVICE,
        target: instanceName,
        ttl,
        cacheFlush: false,
    });
    const meta = (ttl) => ({
        type: TYPE.PTR,
        name: SERVICES_META,
        target: SERVICE,
        ttl,
        cacheFlush: false,
    });
    const srv = (ttl) => ({
        type: TYPE.SRV,
        name: instanceName,
        priority: 0,
        weight: 0,
        port: service.port,
        target: hostName,
        ttl,
        cacheFlush: true,
    });
    const txt = (ttl) => ({
        type: TYPE.TXT,
        name: instanceName,
        entries: Object.entries(service.txt).map(([k, v]) => `${k}=${v}`),
        ttl,
        cacheFlush: true,
    });
    const hostRecords = (ttl) => addresses().map((address) => address.includes(':')
        ? { type: TYPE.AAAA, name: hostName, address, ttl, cacheFlush: true }
        : { type: TYPE.A, name: hostName, address, ttl, cacheFlush: true });
    /** Answers and additionals for one question, or undefined when it is not about us. */
    const answer = (q) => {
        const any = q.type === TYPE.ANY;
        if (same(q.name, SERVICES_META) && (any || q.type === TYPE.PTR))
            return { answers: [meta(OTHER_TTL)], additionals: [] };
        if (same(q.name, SERVICE) && (any || q.type === TYPE.PTR)) {
            return {
                answers: [ptr(OTHER_TTL)],
                additionals: [srv(HOST_TTL), txt(OTHER_TTL), ...hostRecords(HOST_TTL)],
            };
        }
        if (same(q.name, instanceName)) {
            const answers = [
                ...(any || q.type === TYPE.SRV ? [srv(HOST_TTL)] : []),
                ...(any || q.type === TYPE.TXT ? [txt(OTHER_TTL)] : []),
            ];
            return answers.length > 0
                ? { answers, additionals: q.type === TYPE.TXT ? [] : hostRecords(HOST_TTL) }
                : undefined;
        }
        if (same(q.name, hostName)) {
            const answers = hostRecords(HOST_TTL).filter((r) => any || r.type === q.type);
            return answers.length > 0 ? { answers, additionals: [] } : undefined;
        }
        return undefined;
    };
    const announcement = (ttl) => encodeResponse({
        answers: [
            ptr(ttl),
            meta(ttl),
            srv(ttl > 0 ? HOST_TTL : 0),
            txt(ttl),
            ...hostRecords(ttl > 0 ? HOST_TTL : 0),
        ],
    });
    return { instanceName, hostName, answer, announcement };
}
export function createMdnsResponder(options) {
    const { logger } = options;
    const sock = options.socket ?? { bind: '0.0.0.0', port: MDNS_PORT, multicast: true };
    const service = {
        ...options.service,
        instance: sanitizeLabel(options.service.instance),
        host: sanitizeLabel(options.service.host),
    };
    const { instanceName, hostName, answer, announcement } = serviceZone(service, options.addresses ?? defaultAddresses);
    let socket;
    let timer;
    let stopped;
    const announceTarget = () => sock.announceTo ?? { address: MDNS_GROUP, port: MDNS_PORT };
    const send = (packet, port, address) => {
        socket?.send(packet, port, address, (err) => {
            if (err)
                logger.debug('mdns send failed', { err, address, port });
        });
    };
    const onMessage = (packet, from) => {
        let message;
        try {
            message = decodeMessage(packet);
        }
        catch (err) {
            if (err instanceof DnsFormatError)
                logger.debug('ignoring malformed mdns packet', { from: from.address, error: err.message });
            return;
        }
        if (message.isResponse)
            return;
        const answers = [];
        const additionals = [];
        const asked = [];
        let unicast = false;
        for (const q of message.questions) {
            const a = answer(q);
            if (!a)
                continue;
            asked.push(q);
            answers.push(...a.answers);
            additionals.push(...a.additionals.filter((x) => !answers.some((y) => y.type === x.type && y.name === x.name)));
            unicast ||= q.unicastResponse;
        }
        if (answers.length === 0)
            return;
        // A query from a port other than 5353 is a "legacy" resolver expecting a classic unicast DNS reply.
        const legacy = from.port !== MDNS_PORT;
        const reply = encodeResponse({
            ...(legacy ? { id: message.id, questions: asked } : {}),
            answers,
            additionals,
        });
        if (legacy || unicast || !sock.multicast)
            send(reply, from.port, from.address);
        else
            send(reply, MDNS_PORT, MDNS_GROUP);
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
            await new Promise((resolve, reject) => {
                socket.once('error', reject);
                socket.bind(sock.port, sock.bind, () => {
                    socket.off('error', reject);
                    resolve();
                });
            });
            if (sock.multicast) {
                socket.addMembership(MDNS_GROUP);
                socket.setMulticastTTL(255);
                socket.setMulticastLoopback(true);
            }
            logger.info('announcing on mDNS', { instance: instanceName, host: hostName, port: service.port });
            this.announce();
        },
        announce() {
            // RFC 6762 §8.3: at least two announcements, one second apart.
            const { address, port } = announceTarget();
            send(announcement(OTHER_TTL), port, address);
            if (timer)
                clearTimeout(timer);
            timer = setTimeout(() => send(announcement(OTHER_TTL), port, address), 1000);
            timer.unref();
        },
        stop() {
            stopped ??= (async () => {
                if (timer)
                    clearTimeout(timer);
                const s = socket;
                if (!s)
                    return;
                const { address, port } = announceTarget();
                await new Promise((resolve) => s.send(announcement(0), port, address, () => resolve()));
                await new Promise((resolve) => s.close(() => resolve()));
                socket = undefined;
            })();
            return stopped;
        },
    };
}
//# sourceMappingURL=responder.js.map