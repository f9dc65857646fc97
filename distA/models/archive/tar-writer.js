import { BLOCK, FLAG_BY_TYPE, headerChecksum, PAX_LOCAL, paddingFor, paxRecord, } from './tar-format.js';
function writeString(block, value, start, length) {
    const bytes = Buffer.from(value, 'utf8');
    if (bytes.length > length)
        return false;
    bytes.copy(block, start);
    return true;
}
function writeOctal(block, value, start, length) {
    const text = value.toString(8);
    if (text.length > length - 1)
        return false;
    block.write(text.padStart(length - 1, '0') + '\0', start, 'latin1');
    return true;
}
function header(path, flag, size, mode, mtime, linkTarget) {
    const block = Buffer.alloc(BLOCK);
    const overflow = new Map();
    if (!writeString(block, path, 0, 100)) {
        overflow.set('path', path);
        // Readers without pax support still see a recognisable (truncated) name.
        Buffer.from(path, 'utf8').copy(block, 0, 0, 99);
    }
    writeOctal(block, mode, 100, 8);
    writeOctal(block, 0, 108, 8);
    writeOctal(block, 0, 116, 8);
    if (!writeOctal(block, size, 124, 12))
        overflow.set('size', String(size));
    writeOctal(block, Math.floor(mtime), 136, 12);
    block.write(flag, 156, 'latin1');
    if (!writeString(block, linkTarget, 157, 100))
        overflow.set('linkpath', linkTarget);
    block.write('ustar\0', 257, 'latin1');
    block.write('00', 263, 'latin1');
    return { block, overflow };
}
function seal(block) {
    block.write(headerChecksum(block).toString(8).padStart(6, '0') + '\0 ', 148, 'latin1');
    return block;
}
function isBytes(data) {
    return data instanceof Uint8Array;
}
/** The archive as a stream of chunks: pipe it to a file, or through zlib's gzip first. */
export async function* writeTar(entries) {
    for await (const e of entries) {
        const type = e.type ?? 'file';
        const size = e.size ?? (isBytes(e.data) ? e.data.length : 0);
        const mode = e.mode ?? (type === 'directory' ? 0o755 : 0o644);
        const mtime = e.mtime ?? 0;
        const { block, overflow } = header(e.path, FLAG_BY_TYPE[type], size, mode, mtime, e.linkTarget ?? '');
        if (overflow.size > 0) {
            const records = Buffer.concat([...overflow].map(([k, v]) => paxRecord(k, v)));
            const paxHeader = header('PaxHeader', PAX_LOCAL, records.length, 0o644, mtime, '');
            yield seal(paxHeader.block);
            yield records;
            yield Buffer.alloc(paddingFor(records.length));
        }
        yield seal(block);
        if (e.data !== undefined) {
            let written = 0;
            const chunks = isBytes(e.data) ? [e.data] : e.data;
            for await (const chunk of chunks) {
                written += chunk.length;
                if (written > size)
                    throw new Error(`tar entry ${e.path}: data is longer than its size ${size}`);
                yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
            }
            if (written !== size)
                throw new Error(`tar entry ${e.path}: data has ${written} bytes, size says ${size}`);
        }
        yield Buffer.alloc(paddingFor(size));
    }
    yield Buffer.alloc(BLOCK * 2);
}
//# sourceMappingURL=tar-writer.js.map