// The slice of the DNS wire format (RFC 1035) that a DNS-SD responder needs: parse queries (with name
// compression, as every mDNS stack compresses), and write responses with PTR, SRV, TXT, A and AAAA records.
// Responses are written uncompressed: they are small, and one announce stays far below a 1500-byte MTU.
export const TYPE = { A: 1, PTR: 12, TXT: 16, AAAA: 28, SRV: 33, ANY: 255 };
export const CLASS_IN = 1;
/** In a question: "unicast response wanted" (QU). In a record: "cache flush" (this is the whole set). */
export const TOP_BIT = 0x8000;
export class DnsFormatError extends Error {
    constructor(message) {
        super(message);
        this.name = 'DnsFormatError';
    }
}
// ---- reading ----
function readName(buf, start) {
    const labels = [];
    let offset = start;
    let next = -1;
    let jumps = 0;
    for (;;) {
        if (offset >= buf.length)
            throw new DnsFormatError(`Name at offset ${start} runs past the end of the packet`);
        const len = buf[offset];
        if (len === 0) {
            offset += 1;
            break;
        }
        if ((len & 0xc0) === 0xc0) {
            if (offset + 1 >= buf.length)
                throw new DnsFormatError(`Truncated compression pointer at offset ${offset}`);
            if (++jumps > 32)
                throw new DnsFormatError(`Compression pointer loop in name at offset ${start}`);
            if (next === -1)
                next = offset + 2;
            offset = ((len & 0x3f) << 8) | buf[offset + 1];
            continue;
        }
        if ((len & 0xc0) !== 0)
            throw new DnsFormatError(`Unsupported label type 0x${len.toString(16)} at offset ${offset}`);
        if (offset + 1 + len > buf.length)
            throw new DnsFormatError(`Label at offset ${offset} runs past the end of the packet`);
        labels.push(buf.toString('utf8', offset + 1, offset + 1 + len));
        offset += 1 + len;
    }
    return { name: labels.join('.'), next: next === -1 ? offset : next };
}
function need(buf, offset, bytes, what) {
    if (offset + bytes > buf.length)
        throw new DnsFormatError(`Truncated ${what} at offset ${offset}`);
}
function readRecordData(buf, type, offset, length) {
    switch (type) {
        case TYPE.PTR:
            return { type, target: readName(buf, offset).name };
        case TYPE.SRV:
            need(buf, offset, 6, 'SRV record');
            return {
                type,
                priority: buf.readUInt16BE(offset),
                weight: buf.readUInt16BE(offset + 2),
                port: buf.readUInt16BE(offset + 4),
                target: readName(buf, offset + 6).name,
            };
        case TYPE.TXT: {
            const entries = [];
            let p = offset;
            while (p < offset + length) {
                const l = buf[p];
                need(buf, p + 1, l, 'TXT string');
                if (l > 0)
                    entries.push(buf.toString('utf8', p + 1, p + 1 + l));
                p += 1 + l;
            }
            return { type, entries };
        }
        case TYPE.A:
            need(buf, offset, 4, 'A record');
            return { type, address: [...buf.subarray(offset, offset + 4)].join('.') };
        case TYPE.AAAA: {
            need(buf, offset, 16, 'AAAA record');
            const groups = [];
            for (let i = 0; i < 16; i += 2)
                groups.push(buf.readUInt16BE(offset + i).toString(16));
            return { type, address: groups.join(':') };
        }
        default:
            return undefined;
    }
}
export function decodeMessage(buf) {
    if (buf.length < 12)
        throw new DnsFormatError(`Packet of ${buf.length} bytes is shorter than a DNS header (12)`);
    const id = buf.readUInt16BE(0);
    const flags = buf.readUInt16BE(2);
    const qd = buf.readUInt16BE(4);
    const an = buf.readUInt16BE(6);
    let offset = 12;
    const questions = [];
    for (let i = 0; i < qd; i++) {
        const { name, next } = readName(buf, offset);
        need(buf, next, 4, 'question');
        const cls = buf.readUInt16BE(next + 2);
        questions.push({ name, type: buf.readUInt16BE(next), unicastResponse: (cls & TOP_BIT) !== 0 });
        offset = next + 4;
    }
    const answers = [];
    for (let i = 0; i < an; i++) {
        const { name, next } = readName(buf, offset);
        need(buf, next, 10, 'record header');
        const type = buf.readUInt16BE(next);
        const cls = buf.readUInt16BE(next + 2);
        const ttl = buf.readUInt32BE(next + 4);
        const length = buf.readUInt16BE(next + 8);
        need(buf, next + 10, length, 'record data');
        const data = readRecordData(buf, type, next + 10, length);
        if (data)
            answers.push({ ...data, name, ttl, cacheFlush: (cls & TOP_BIT) !== 0 });
        offset = next + 10 + length;
    }
    return { id, isResponse: (flags & 0x8000) !== 0, questions, answers };
}
// ---- writing ----
export function encodeName(name) {
    const parts = [];
    for (const label of name.split('.').filter((l) => l.length > 0)) {
        const bytes = Buffer.from(label, 'utf8');
        if (bytes.length > 63)
            throw new DnsFormatError(`Label ${JSON.stringify(label)} is longer than 63 bytes`);
        parts.push(Buffer.from([bytes.length]), bytes);
    }
    parts.push(Buffer.from([0]));
    const out = Buffer.concat(parts);
    if (out.length > 255)
        throw new DnsFormatError(`Name ${JSON.stringify(name)} is longer than 255 bytes`);
    return out;
}
function ipv4Bytes(address) {
    const parts = address.split('.').map(Number);
    if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
        throw new DnsFormatError(`Not an IPv4 address: ${JSON.stringify(address)}`);
    }
    return Buffer.from(parts);
}
function ipv6Bytes(address) {
    const [head, tail] = address.split('::');
    const h = head ? head.split(':') : [];
    const t = tail !== undefined && tail.length > 0 ? tail.split(':') : [];
    const fill = address.includes('::') ? 8 - h.length - t.length : 0;
    const groups = [...h, ...Array(fill).fill('0'), ...t];
    if (groups.length !== 8 || groups.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) {
        throw new DnsFormatError(`Not an IPv6 address: ${JSON.stringify(address)}`);
    }
    const out = Buffer.alloc(16);
    for (const [i, g] of groups.entries())
        out.writeUInt16BE(Number.parseInt(g, 16), i * 2);
    return out;
}
function encodeData(r) {
    switch (r.type) {
        case TYPE.PTR:
            return encodeName(r.target);
        case TYPE.SRV: {
            const head = Buffer.alloc(6);
            head.writeUInt16BE(r.priority, 0);
            head.writeUInt16BE(r.weight, 2);
            head.writeUInt16BE(r.port, 4);
            return Buffer.concat([head, encodeName(r.target)]);
        }
        case TYPE.TXT: {
            // An empty TXT record is one zero-length string (RFC 6763 §6.1).
            if (r.entries.length === 0)
                return Buffer.from([0]);
            return Buffer.concat(r.entries.map((e) => {
                const b = Buffer.from(e, 'utf8');
                if (b.length > 255)
                    throw new DnsFormatError(`TXT entry longer than 255 bytes: ${e.slice(0, 32)}…`);
                return Buffer.concat([Buffer.from([b.length]), b]);
            }));
        }
        case TYPE.A:
            return ipv4Bytes(r.address);
        case TYPE.AAAA:
            return ipv6Bytes(r.address);
    }
}
function encodeRecord(r) {
    const name = encodeName(r.name);
    const data = encodeData(r);
    const fixed = Buffer.alloc(10);
    fixed.writeUInt16BE(r.type, 0);
    fixed.writeUInt16BE(CLASS_IN | (r.cacheFlush ? TOP_BIT : 0), 2);
    fixed.writeUInt32BE(r.ttl, 4);
    fixed.writeUInt16BE(data.length, 8);
    return Buffer.concat([name, fixed, data]);
}
/** An authoritative response. `questions` are echoed only for legacy unicast queries (RFC 6762 §6.7). */
export function encodeResponse(options) {
    const questions = options.questions ?? [];
    const additionals = options.additionals ?? [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(options.id ?? 0, 0);
    header.writeUInt16BE(0x8400, 2);
    header.writeUInt16BE(questions.length, 4);
    header.writeUInt16BE(options.answers.length, 6);
    header.writeUInt16BE(0, 8);
    header.writeUInt16BE(additionals.length, 10);
    const qs = questions.map((q) => {
        const tail = Buffer.alloc(4);
        tail.writeUInt16BE(q.type, 0);
        tail.writeUInt16BE(CLASS_IN, 2);
        return Buffer.concat([encodeName(q.name), tail]);
    });
    return Buffer.concat([
        header,
        ...qs,
        ...options.answers.map(encodeRecord),
        ...additionals.map(encodeRecord),
    ]);
}
export function encodeQuery(questions, id = 0) {
    const header = Buffer.alloc(12);
    header.writeUInt16BE(id, 0);
    header.writeUInt16BE(questions.length, 4);
    return Buffer.concat([
        header,
        ...questions.map((q) => {
            const tail = Buffer.alloc(4);
            tail.writeUInt16BE(q.type, 0);
            tail.writeUInt16BE(CLASS_IN | (q.unicastResponse ? TOP_BIT : 0), 2);
            return Buffer.concat([encodeName(q.name), tail]);
        }),
    ]);
}
//# sourceMappingURL=dns-packet.js.map