import { ByteBuffer } from 'flatbuffers';
// Bounds-checked access to a FlatBuffer of unknown origin. flatbuffers' own ByteBuffer reads the primitives;
// every offset is checked here first, because generated accessors trust the file and a truncated or hostile
// .mnn would make them read past the end or loop over a garbage vector length.
export class FlatBufferFormatError extends Error {
    constructor(message) {
        super(message);
        this.name = 'FlatBufferFormatError';
    }
}
export class FlatBufferReader {
    bb;
    size;
    constructor(bytes) {
        this.bb = new ByteBuffer(bytes);
        this.size = bytes.length;
    }
    #need(pos, bytes, what) {
        if (!Number.isInteger(pos) || pos < 0 || pos + bytes > this.size)
            throw new FlatBufferFormatError(`${what} at byte ${pos} lies outside the ${this.size}-byte file`);
    }
    /** The root table (first uoffset of the buffer). */
    root() {
        this.#need(0, 4, 'root offset');
        return this.table(this.bb.readUint32(0), 'root table');
    }
    /** Validates a table position and its vtable; returns the position. */
    table(pos, what) {
        this.#need(pos, 4, what);
        const vtable = pos - this.bb.readInt32(pos);
        this.#need(vtable, 4, `vtable of ${what}`);
        const vtableSize = this.bb.readUint16(vtable);
        if (vtableSize < 4 || vtableSize % 2 !== 0)
            throw new FlatBufferFormatError(`vtable of ${what} has invalid size ${vtableSize}`);
        this.#need(vtable, vtableSize, `vtable of ${what}`);
        return pos;
    }
    /** Absolute position of field `id` in the table, or 0 when the field is absent. */
    field(table, id) {
        const vtable = table - this.bb.readInt32(table);
        const slot = 4 + 2 * id;
        if (slot >= this.bb.readUint16(vtable))
            return 0;
        const off = this.bb.readUint16(vtable + slot);
        return off === 0 ? 0 : table + off;
    }
    #indirect(pos, what) {
        this.#need(pos, 4, what);
        return pos + this.bb.readUint32(pos);
    }
    int32(table, id, fallback) {
        const p = this.field(table, id);
        if (p === 0)
            return fallback;
        this.#need(p, 4, `int field ${id}`);
        return this.bb.readInt32(p);
    }
    int8(table, id, fallback) {
        const p = this.field(table, id);
        if (p === 0)
            return fallback;
        this.#need(p, 1, `byte field ${id}`);
        return this.bb.readInt8(p);
    }
    uint8(table, id, fallback) {
        const p = this.field(table, id);
        if (p === 0)
            return fallback;
        this.#need(p, 1, `ubyte field ${id}`);
        return this.bb.readUint8(p);
    }
    bool(table, id) {
        return this.uint8(table, id, 0) !== 0;
    }
    string(table, id, what) {
        const p = this.field(table, id);
        return p === 0 ? undefined : this.#stringAt(this.#indirect(p, what), what);
    }
    #stringAt(pos, what) {
        this.#need(pos, 4, what);
        const len = this.bb.readUint32(pos);
        this.#need(pos + 4, len, what);
        return Buffer.from(this.bb.bytes().buffer, this.bb.bytes().byteOffset + pos + 4, len).toString('utf8');
    }
    subTable(table, id, what) {
        const p = this.field(table, id);
        return p === 0 ? undefined : this.table(this.#indirect(p, what), what);
    }
    vector(table, id, elementSize, what) {
        const p = this.field(table, id);
        if (p === 0)
            return undefined;
        const v = this.#indirect(p, what);
        this.#need(v, 4, what);
        const length = this.bb.readUint32(v);
        // Checking the whole extent up front is what bounds every loop over this vector by the file size.
        this.#need(v + 4, length * elementSize, `${what} (${length} elements)`);
        return { start: v + 4, length };
    }
    int32Vector(table, id, what) {
        const v = this.vector(table, id, 4, what);
        if (!v)
            return undefined;
        const out = [];
        for (let i = 0; i < v.length; i++)
            out.push(this.bb.readInt32(v.start + 4 * i));
        return out;
    }
    int64Vector(table, id, what) {
        const v = this.vector(table, id, 8, what);
        if (!v)
            return undefined;
        const out = [];
        for (let i = 0; i < v.length; i++)
            out.push(this.bb.readInt64(v.start + 8 * i));
        return out;
    }
    stringVector(table, id, what) {
        const v = this.vector(table, id, 4, what);
        if (!v)
            return undefined;
        const out = [];
        for (let i = 0; i < v.length; i++)
            out.push(this.#stringAt(this.#indirect(v.start + 4 * i, what), what));
        return out;
    }
    tableVector(table, id, what) {
        const v = this.vector(table, id, 4, what);
        if (!v)
            return undefined;
        const out = [];
        for (let i = 0; i < v.length; i++)
            out.push(this.table(this.#indirect(v.start + 4 * i, what), `${what}[${i}]`));
        return out;
    }
}
//# sourceMappingURL=flatbuffer-reader.js.map