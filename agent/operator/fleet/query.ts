import type { FleetSelector } from '../../fleet/protocol.js';
import type { DeviceSummary } from './operator.js';

// `fleet ls` filters and sort keys, and which listed devices a fleet command's selector addresses (to name those
// that did not answer by the deadline). Pure functions of the listing.

export interface DeviceFilter {
  tag?: string;
  board?: string;
  online?: boolean;
  /** Matches `id@version` or a bare id anywhere in the device's models (telemetry slots or models document). */
  model?: string;
}

export const SORT_KEYS = ['id', 'board', 'status', 'telemetry-age', 'model'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export function modelsOfDevice(d: DeviceSummary): string[] {
  const fromSlots = Object.values(d.lastTelemetry?.slots ?? {})
    .map((s) => s.model)
    .filter((m): m is string => typeof m === 'string');
  const doc = d.documents.models?.data['installedVersion'];
  const fromDoc = typeof doc === 'string' && doc !== '' ? doc.split(', ') : [];
  return [...new Set([...fromSlots, ...fromDoc])];
}

export function filterDevices(devices: readonly DeviceSummary[], f: DeviceFilter): DeviceSummary[] {
  return devices.filter(
    (d) =>
      (f.tag === undefined || (d.status?.tags ?? []).includes(f.tag)) &&
      (f.board === undefined || d.status?.board?.family === f.board) &&
      (f.online === undefined || (d.status?.state === 'online') === f.online) &&
      (f.model === undefined || modelsOfDevice(d).some((m) => m === f.model || m.split('@')[0] === f.model)),
  );
}

export function sortDevices(devices: readonly DeviceSummary[], key: SortKey, now: number): DeviceSummary[] {
  const value = (d: DeviceSummary): string | number => {
    switch (key) {
      case 'board':
        return d.status?.board?.family ?? '';
      case 'status':
        return d.status?.state ?? '';
      case 'telemetry-age':
        return d.lastTelemetry ? now - d.lastTelemetry.ts : Number.POSITIVE_INFINITY;
      case 'model':
        return modelsOfDevice(d).join(',');
      default:
        return d.deviceId;
    }
  };
  return [...devices].sort((a, b) => {
    const x = value(a);
    const y = value(b);
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return c !== 0 ? c : a.deviceId.localeCompare(b.deviceId);
  });
}

/** The online devices a selector addresses, as the devices themselves decide (agent/fleet/agent-commands.ts). */
export function addressed(devices: readonly DeviceSummary[], s: FleetSelector): string[] {
  return devices
    .filter((d) => d.status?.state === 'online')
    .filter(
      (d) =>
        (!s.deviceIds || s.deviceIds.includes(d.deviceId)) &&
        (!s.tags || s.tags.some((t) => (d.status?.tags ?? []).includes(t))) &&
        (!s.boardFamilies || s.boardFamilies.includes(d.status?.board?.family ?? '')),
    )
    .map((d) => d.deviceId);
}
