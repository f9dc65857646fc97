// The parts of the POSIX ustar / pax / GNU tar formats that both the reader and the writer need.
export const BLOCK = 512;
const TYPE_BY_FLAG = {
    '0': 'file',
    '\0': 'file',
    '1': 'hardlink',
    '2': 'symlink',
    '3': 'char-device',
    '4': 'block-device',
    '5': 'directory',
    '6': 'fifo',
    '7': 'contiguous-file',
};
export const FLAG_BY_TYPE = {
    file: '0',
    hardlink: '1',
    symlink: '2',
    'char-device': '3',
    'block-device': '4',
    directory: '5',
    fifo: '6',
    'contiguous-file': '7',
};
/** Flags of meta entries that describe the next entry rather than being one. */
export const PAX_LOCAL = 'x';
export const PAX_GLOBAL = 'g';
export const GNU_LONG_NAME = 'L';
export const GNU_LONG_LINK = 'K';
export function entryTypeOfFlag(flag) {
    return TYPE_BY_FLAG[flag];
}
export function paddingFor(size) {
    const rest = size % BLOCK;
    return rest === 0 ? 0 : BLOCK - rest;
}
export function headerChecksum(header) {
    let sum = 0;
    for (let i = 0; i < BLOCK; i++)
        sum += i >= 148 && i < 156 ? 0x20 : header[i];
    return sum;
}
/** One pax extended-header record: "<len> <key>=<value>\n", where len counts the whole record itself. */
export function paxRecord(key, value) {
    const body = ` ${key}=${value}\n`;
    const bodyLen = Buffer.byteLength(body);
    const digits = String(bodyLen).length;
    let len = bodyLen + digits;
    // Adding the length's own digits can carry it into one more digit (e.g. 98 + 2 = 100).
    if (String(len).length !== digits)
        len = bodyLen + String(len).length;
    return Buffer.from(`${len}${body}`);
}
//# sourceMappingURL=tar-format.js.map