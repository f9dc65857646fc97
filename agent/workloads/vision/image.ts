// Frames as plain RGB bytes (what the engine's image input and the scene detector take), PNG in and out without
// a native image library, and everything else (JPEG, BMP, WebP) decoded by ffmpeg, which the camera path needs
// anyway.
import { spawn } from 'node:child_process';
import { deflateSync, inflateSync } from 'node:zlib';
import { WorkloadError } from '../shared/errors.js';

export interface RgbFrame {
  width: number;
  height: number;
  /** Row-major RGB, 3 bytes per pixel. */
  data: Uint8Array;
}

export type ImageKind = 'png' | 'jpeg' | 'bmp' | 'webp' | 'gif';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The format by its magic bytes; undefined when the bytes are not an image we know. */
export function sniffImage(bytes: Uint8Array): ImageKind | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 16));
  if (b.length >= 8 && b.subarray(0, 8).equals(PNG_SIGNATURE)) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 2 && b[0] === 0x42 && b[1] === 0x4d) return 'bmp';
  if (b.length >= 12 && b.toString('ascii', 0, 4) === 'RIFF' && b.toString('ascii', 8, 12) === 'WEBP')
    return 'webp';
  if (b.length >= 6 && b.toString('ascii', 0, 3) === 'GIF') return 'gif';
  return undefined;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** 8-bit PNG (grey, RGB, palette, with or without alpha; not interlaced) → RGB. Alpha is dropped. */
export function decodePng(bytes: Uint8Array): RgbFrame {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (sniffImage(buf) !== 'png') throw new WorkloadError('EFRAME', 'Not a PNG image');
  let width = 0;
  let height = 0;
  let colorType = -1;
  let palette: Buffer | undefined;
  const idat: Buffer[] = [];
  let at = 8;
  while (at + 8 <= buf.length) {
    const len = buf.readUInt32BE(at);
    const type = buf.toString('ascii', at + 4, at + 8);
    const body = buf.subarray(at + 8, at + 8 + len);
    if (body.length < len) throw new WorkloadError('EFRAME', `PNG is truncated in its ${type} chunk`);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const depth = body[8]!;
      colorType = body[9]!;
      if (depth !== 8)
        throw new WorkloadError('EFRAME', `PNG bit depth ${depth} is not supported (8-bit only)`);
      if (body[12] !== 0) throw new WorkloadError('EFRAME', 'Interlaced PNG is not supported');
      if (![0, 2, 3, 4, 6].includes(colorType))
        throw new WorkloadError('EFRAME', `PNG colour type ${colorType} is invalid`);
    } else if (type === 'PLTE') palette = Buffer.from(body);
    else if (type === 'IDAT') idat.push(body);
    else if (type === 'IEND') break;
    at += 12 + len;
  }
  if (width === 0 || height === 0 || idat.length === 0)
    throw new WorkloadError('EFRAME', 'PNG has no image data');
  if (width * height > 64 * 1024 * 1024)
    throw new WorkloadError('EFRAME', `PNG of ${width}×${height} is too large`);
  const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType as 0 | 2 | 3 | 4 | 6];
  const stride = width * channels;
  let raw: Buffer;
  try {
    raw = inflateSync(Buffer.concat(idat));
  } catch (err) {
    throw new WorkloadError('EFRAME', `PNG image data is corrupt: ${(err as Error).message}`);
  }
  if (raw.length < (stride + 1) * height)
    throw new WorkloadError('EFRAME', 'PNG image data is shorter than its size says');
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = pixels.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? pixels.subarray((y - 1) * stride, y * stride) : undefined;
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? out[x - channels]! : 0;
      const b = prev ? prev[x]! : 0;
      const c = prev && x >= channels ? prev[x - channels]! : 0;
      const v = line[x]!;
      switch (filter) {
        case 0:
          out[x] = v;
          break;
        case 1:
          out[x] = v + a;
          break;
        case 2:
          out[x] = v + b;
          break;
        case 3:
          out[x] = v + ((a + b) >> 1);
          break;
        case 4:
          out[x] = v + paeth(a, b, c);
          break;
        default:
          throw new WorkloadError('EFRAME', `PNG row ${y} has an invalid filter ${filter}`);
      }
    }
  }
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    if (colorType === 2 || colorType === 6) {
      rgb[i * 3] = pixels[i * channels]!;
      rgb[i * 3 + 1] = pixels[i * channels + 1]!;
      rgb[i * 3 + 2] = pixels[i * channels + 2]!;
    } else if (colorType === 3) {
      const p = pixels[i]! * 3;
      if (!palette || p + 2 >= palette.length)
        throw new WorkloadError('EFRAME', 'PNG palette index out of range');
      rgb.set(palette.subarray(p, p + 3), i * 3);
    } else {
      rgb.fill(pixels[i * channels]!, i * 3, i * 3 + 3);
    }
  }
  return { width, height, data: rgb };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])), 0);
  return Buffer.concat([head, body, crc]);
}

/** RGB → PNG, for thumbnails; `Up` filtering compresses camera images well enough at no cost. */
export function encodePng(frame: RgbFrame): Buffer {
  const stride = frame.width * 3;
  const raw = Buffer.alloc((stride + 1) * frame.height);
  for (let y = 0; y < frame.height; y++) {
    raw[y * (stride + 1)] = y === 0 ? 0 : 2;
    for (let x = 0; x < stride; x++) {
      const v = frame.data[y * stride + x]!;
      raw[y * (stride + 1) + 1 + x] = y === 0 ? v : (v - frame.data[(y - 1) * stride + x]!) & 0xff;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(frame.width, 0);
  ihdr.writeUInt32BE(frame.height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Area-averaging downscale to fit within maxWidth × maxHeight (never upscales; keeps the aspect ratio). */
export function fitFrame(frame: RgbFrame, maxWidth: number, maxHeight: number): RgbFrame {
  const scale = Math.min(1, maxWidth / frame.width, maxHeight / frame.height);
  if (scale === 1) return frame;
  const width = Math.max(1, Math.round(frame.width * scale));
  const height = Math.max(1, Math.round(frame.height * scale));
  const out = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const y0 = Math.floor((y * frame.height) / height);
    const y1 = Math.max(y0 + 1, Math.floor(((y + 1) * frame.height) / height));
    for (let x = 0; x < width; x++) {
      const x0 = Math.floor((x * frame.width) / width);
      const x1 = Math.max(x0 + 1, Math.floor(((x + 1) * frame.width) / width));
      const sum = [0, 0, 0];
      for (let yy = y0; yy < y1; yy++) {
        for (let xx = x0; xx < x1; xx++) {
          const i = (yy * frame.width + xx) * 3;
          sum[0]! += frame.data[i]!;
          sum[1]! += frame.data[i + 1]!;
          sum[2]! += frame.data[i + 2]!;
        }
      }
      const n = (y1 - y0) * (x1 - x0);
      const o = (y * width + x) * 3;
      out[o] = Math.round(sum[0]! / n);
      out[o + 1] = Math.round(sum[1]! / n);
      out[o + 2] = Math.round(sum[2]! / n);
    }
  }
  return { width, height, data: out };
}

/** Parses binary PPM (P6, maxval 255), ffmpeg's simplest self-describing RGB output. */
export function parsePpm(buf: Buffer): { frame: RgbFrame; bytes: number } | undefined {
  const fields: string[] = [];
  let at = 0;
  while (fields.length < 4 && at < buf.length) {
    while (at < buf.length && /\s/.test(String.fromCharCode(buf[at]!))) at++;
    if (buf[at] === 0x23) {
      while (at < buf.length && buf[at] !== 0x0a) at++;
      continue;
    }
    const start = at;
    while (at < buf.length && !/\s/.test(String.fromCharCode(buf[at]!))) at++;
    if (at >= buf.length) return undefined;
    fields.push(buf.toString('ascii', start, at));
  }
  if (fields.length < 4) return undefined;
  if (fields[0] !== 'P6' || fields[3] !== '255')
    throw new WorkloadError('EFRAME', 'ffmpeg produced an unexpected PPM');
  const width = Number(fields[1]);
  const height = Number(fields[2]);
  const start = at + 1;
  const size = width * height * 3;
  if (buf.length < start + size) return undefined;
  return {
    frame: { width, height, data: new Uint8Array(buf.subarray(start, start + size)) },
    bytes: start + size,
  };
}

/** JPEG, BMP, WebP, GIF (first frame) through ffmpeg; PNG in process. */
export async function decodeImage(bytes: Uint8Array, ffmpeg = 'ffmpeg'): Promise<RgbFrame> {
  const kind = sniffImage(bytes);
  if (kind === undefined) {
    throw new WorkloadError('EFRAME', 'Frame is not an image: expected PNG, JPEG, BMP, WebP or GIF data');
  }
  if (kind === 'png') return decodePng(bytes);
  const child = spawn(
    ffmpeg,
    ['-v', 'error', '-i', 'pipe:0', '-frames:v', '1', '-f', 'image2pipe', '-vcodec', 'ppm', 'pipe:1'],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  const out: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => out.push(d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr = (stderr + d).slice(-300);
  });
  child.stdin.on('error', () => {});
  child.stdin.end(bytes);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', (err) =>
      reject(new WorkloadError('ETOOL', `Cannot run ${ffmpeg} to decode a ${kind}: ${err.message}`)),
    );
    child.once('close', resolve);
  });
  const parsed = code === 0 ? parsePpm(Buffer.concat(out)) : undefined;
  if (!parsed)
    throw new WorkloadError(
      'EFRAME',
      `Cannot decode the ${kind} image: ${stderr.trim() || `ffmpeg exited with ${code}`}`,
    );
  return parsed.frame;
}
