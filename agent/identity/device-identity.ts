import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileDurable } from '../../lib/durable-fs.js';
import { MnnEdgeError } from '../../lib/errors.js';

// A device id must be stable for the life of the board and unique across a fleet. Images are flashed by the
// thousand, so anything baked into the image (/etc/machine-id, hostnames) collides; the SoC's fused serial does
// not, and a UUID minted on first boot and kept in the data dir is the fallback when the board exposes none.

export type DeviceIdSource = 'config' | 'device-tree-serial' | 'soc0-serial' | 'generated' | 'stored';

export interface DeviceIdentity {
  deviceId: string;
  tags: string[];
  source: DeviceIdSource;
  /** Where the id came from: the file read (relative to root or data dir) and the raw value found there. */
  evidence: { path?: string; value?: string; note: string };
}

export interface ResolveIdentityOptions {
  /** Root directory the board files are read below: `/` on a board, a fixture tree in tests. */
  root: string;
  dataDir: string;
  config: { deviceId?: string; tags?: readonly string[] };
  /** Injected for tests; defaults to crypto.randomUUID. */
  generateId?: () => string;
}

export const DEVICE_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
export const DEVICE_ID_FILE = 'device-id';

// Serial files are read in this order. `proc/device-tree` is a symlink to the base directory on a live system;
// fixture trees and some chroots only carry the base directory, so both spellings are tried.
const SERIAL_SOURCES: ReadonlyArray<{ path: string; source: DeviceIdSource }> = [
  { path: 'proc/device-tree/serial-number', source: 'device-tree-serial' },
  { path: 'sys/firmware/devicetree/base/serial-number', source: 'device-tree-serial' },
  { path: 'sys/devices/soc0/serial_number', source: 'soc0-serial' },
];

/**
 * Vendor kernels fill serial files with placeholders when the fuse is unprogrammed ("0000000000000000",
 * "Unknown", all-F). Those collide across boards exactly like machine-id, so they are not serials.
 */
export function normaliseSerial(raw: string): string | undefined {
  // Device-tree strings are NUL-terminated; soc0 attributes end in a newline.
  const value = raw.replace(/\0+$/, '').trim();
  if (value.length === 0 || value.length > 64) return undefined;
  if (!DEVICE_ID_PATTERN.test(value)) return undefined;
  if (/^0+$/.test(value) || /^f+$/i.test(value)) return undefined;
  if (/^(unknown|none|null|n\/a|default string|to be filled.*)$/i.test(value)) return undefined;
  return value;
}

function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return undefined;
  }
}

export function resolveDeviceIdentity(options: ResolveIdentityOptions): DeviceIdentity {
  const tags = [...new Set(options.config.tags ?? [])];
  const configured = options.config.deviceId;
  if (configured !== undefined) {
    if (!DEVICE_ID_PATTERN.test(configured)) {
      throw new MnnEdgeError(
        'EINVAL',
        `Expected 1-64 characters of A-Z a-z 0-9 _ . : - for deviceId but received ${JSON.stringify(configured)}`,
      );
    }
    return {
      deviceId: configured,
      tags,
      source: 'config',
      evidence: { note: 'deviceId set in configuration' },
    };
  }

  const rejected: string[] = [];
  for (const candidate of SERIAL_SOURCES) {
    const raw = readOptional(join(options.root, candidate.path));
    if (raw === undefined) continue;
    const serial = normaliseSerial(raw);
    if (serial !== undefined) {
      return {
        deviceId: serial,
        tags,
        source: candidate.source,
        evidence: { path: `/${candidate.path}`, value: serial, note: 'board serial number' },
      };
    }
    rejected.push(`/${candidate.path} ${JSON.stringify(raw.replace(/\0+$/, '').trim())}`);
  }

  const idPath = join(options.dataDir, DEVICE_ID_FILE);
  const stored = readOptional(idPath)?.trim();
  if (stored !== undefined && stored.length > 0) {
    if (!DEVICE_ID_PATTERN.test(stored)) {
      throw new MnnEdgeError(
        'EIDENTITY',
        `Stored device id in ${idPath} is malformed (${JSON.stringify(stored.slice(0, 70))}); fix or delete the file`,
      );
    }
    return {
      deviceId: stored,
      tags,
      source: 'stored',
      evidence: {
        path: idPath,
        value: stored,
        note: 'id generated on an earlier start (board has no serial)',
      },
    };
  }

  const generated = (options.generateId ?? randomUUID)();
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  writeFileDurable(idPath, `${generated}\n`, 0o644);
  const why =
    rejected.length > 0 ? `placeholder serials ignored: ${rejected.join(', ')}` : 'board exposes no serial';
  return {
    deviceId: generated,
    tags,
    source: 'generated',
    evidence: { path: idPath, value: generated, note: `generated on first start (${why})` },
  };
}
