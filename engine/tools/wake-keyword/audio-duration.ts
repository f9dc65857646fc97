// Durations of audio files from their own headers, without decoding: WAV (data size / byte rate), Ogg Vorbis and
// Opus (the last page's granule position over the rate), FLAC (STREAMINFO's sample count). Thousands of short
// clips (spoken words) are indexed in seconds where one ffprobe each took minutes on a busy host; other formats
// fall back to ffprobe.
import { execFile } from 'node:child_process';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

function readAt(fd: number, at: number, n: number): Buffer {
  const b = Buffer.alloc(n);
  const got = readSync(fd, b, 0, n, at);
  return b.subarray(0, got);
}

function wavSeconds(head: Buffer, size: number): number | undefined {
  if (head.toString('ascii', 0, 4) !== 'RIFF' || head.toString('ascii', 8, 12) !== 'WAVE') return undefined;
  let at = 12;
  let byteRate = 0;
  while (at + 8 <= head.length) {
    const id = head.toString('ascii', at, at + 4);
    const len = head.readUInt32LE(at + 4);
    if (id === 'fmt ') byteRate = head.readUInt32LE(at + 16);
    if (id === 'data') {
      if (byteRate <= 0) return undefined;
      const bytes = len === 0 || len === 0xffffffff || at + 8 + len > size ? size - at - 8 : len;
      return bytes / byteRate;
    }
    at += 8 + len + (len % 2);
  }
  return undefined;
}

/** Ogg: the first page names the codec (and Vorbis its rate); the last page's granule is the length. */
function oggSeconds(fd: number, head: Buffer, size: number): number | undefined {
  if (head.toString('ascii', 0, 4) !== 'OggS') return undefined;
  const body = 27 + head[26]!;
  let rate: number;
  let preSkip = 0;
  if (head.toString('ascii', body + 1, body + 7) === 'vorbis') rate = head.readUInt32LE(body + 12);
  else if (head.toString('ascii', body, body + 8) === 'OpusHead') {
    rate = 48000; // Opus granules count 48 kHz samples whatever the input rate
    preSkip = head.readUInt16LE(body + 10);
  } else return undefined;
  const tailLen = Math.min(size, 65536);
  const tail = readAt(fd, size - tailLen, tailLen);
  for (let i = tail.length - 27; i >= 0; i--) {
    if (tail[i] !== 0x4f || tail.toString('ascii', i, i + 4) !== 'OggS') continue;
    const granule = Number(tail.readBigInt64LE(i + 6));
    if (granule >= 0) return Math.max(0, granule - preSkip) / rate;
  }
  return undefined;
}

function flacSeconds(head: Buffer): number | undefined {
  if (head.toString('ascii', 0, 4) !== 'fLaC') return undefined;
  // STREAMINFO is the first metadata block: rate (20 bits) and total samples (36 bits) at bytes 18–25.
  const b = head.subarray(8);
  const rate = (b[10]! << 12) | (b[11]! << 4) | (b[12]! >> 4);
  const total = (b[13]! & 0x0f) * 2 ** 32 + b.readUInt32BE(14);
  return rate > 0 && total > 0 ? total / rate : undefined;
}

/** Seconds of audio in the file, from its header; ffprobe when the header does not say (MP3, others). */
export async function audioSeconds(path: string): Promise<number> {
  const fd = openSync(path, 'r');
  let seconds: number | undefined;
  try {
    const size = fstatSync(fd).size;
    const head = readAt(fd, 0, 4096);
    seconds = wavSeconds(head, size) ?? oggSeconds(fd, head, size) ?? flacSeconds(head);
  } finally {
    closeSync(fd);
  }
  if (seconds !== undefined && Number.isFinite(seconds)) return seconds;
  try {
    const { stdout } = await run('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'format=duration',
      '-of',
      'csv=p=0',
      path,
    ]);
    const s = Number(stdout.trim());
    return Number.isFinite(s) ? s : 0;
  } catch {
    return 0;
  }
}
