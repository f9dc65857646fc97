// Many simulated boards in one process (sim-device.ts): spread over the broker nodes (device i starts at node
// i mod n and moves on from there), started in small batches so the connect storm is the broker's, not ours.
import type { OtaConfig } from '../../ota/config.js';
import { type HealthOutcome, SimDevice } from './sim-device.js';

export interface SimFleetOptions {
  count: number;
  dir: string;
  urls: string[];
  protocolVersion: 4 | 5;
  ota: Pick<OtaConfig, 'trustedKeys'> & Partial<OtaConfig>;
  /** Device ids are `<prefix>-0001` …; default `sim`. */
  prefix?: string;
  tags?: (i: number) => string[];
  boardFamily?: (i: number) => string;
  health?: (deviceId: string, version: string) => HealthOutcome;
  telemetryIntervalMs?: number;
  reconnect?: { minMs: number; maxMs: number };
  /** Devices started at once. */
  batch?: number;
  onProgress?: (started: number) => void;
}

export interface SimFleet {
  readonly devices: SimDevice[];
  online(): number;
  /** Devices that activated one version more than once. */
  doubleInstalls(): string[];
  byId(id: string): SimDevice | undefined;
  stop(): Promise<void>;
}

export function simDeviceId(prefix: string, i: number): string {
  return `${prefix}-${String(i + 1).padStart(4, '0')}`;
}

export async function startSimFleet(o: SimFleetOptions): Promise<SimFleet> {
  const prefix = o.prefix ?? 'sim';
  const devices: SimDevice[] = [];
  for (let i = 0; i < o.count; i++) {
    const deviceId = simDeviceId(prefix, i);
    const n = o.urls.length;
    devices.push(
      new SimDevice({
        deviceId,
        tags: o.tags?.(i) ?? ['sim', i % 2 === 0 ? 'even' : 'odd'],
        board: { family: o.boardFamily?.(i) ?? (i % 3 === 0 ? 'rk3588' : 'jetson'), model: 'sim board' },
        urls: o.urls.map((_, k) => o.urls[(i + k) % n]!),
        protocolVersion: o.protocolVersion,
        dir: o.dir,
        ota: o.ota,
        health: (version) => o.health?.(deviceId, version) ?? 'pass',
        telemetryIntervalMs: o.telemetryIntervalMs ?? 30_000,
        reconnect: o.reconnect ?? { minMs: 1_000, maxMs: 30_000 },
      }),
    );
  }
  const batch = o.batch ?? 50;
  for (let i = 0; i < devices.length; i += batch) {
    await Promise.all(devices.slice(i, i + batch).map((d) => d.start()));
    o.onProgress?.(Math.min(devices.length, i + batch));
  }
  const index = new Map(devices.map((d) => [d.id, d]));
  return {
    devices,
    online: () => devices.filter((d) => d.online).length,
    doubleInstalls: () =>
      devices.filter((d) => [...d.activations.values()].some((n) => n > 1)).map((d) => d.id),
    byId: (id) => index.get(id),
    async stop() {
      for (let i = 0; i < devices.length; i += batch)
        await Promise.all(devices.slice(i, i + batch).map((d) => d.stop().catch(() => undefined)));
    },
  };
}
