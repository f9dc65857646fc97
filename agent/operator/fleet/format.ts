import type { CommandResponse, TelemetryMessage } from '../../fleet/protocol.js';
import type { DeviceSummary } from './operator.js';

// Plain-text tables for the fleet CLI. Pure functions of their input (and `now`), so they are tested as text.

export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

export function formatAge(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '-';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d`;
}

function modelsOf(d: DeviceSummary): string {
  const slots = d.lastTelemetry?.slots;
  if (slots && Object.keys(slots).length > 0)
    return Object.entries(slots)
      .map(([slot, s]) => `${slot}=${s.model ?? '-'}`)
      .join(',');
  const placement = d.documents.placement?.data['slots'];
  if (placement && typeof placement === 'object')
    return Object.entries(placement as Record<string, { model?: unknown }>)
      .map(([slot, s]) => `${slot}=${typeof s?.model === 'string' ? s.model : '-'}`)
      .join(',');
  return '-';
}

export function formatDeviceTable(devices: readonly DeviceSummary[], now: number): string {
  const rows = devices.map((d) => {
    const board = d.status?.board;
    // Telemetry timestamps come from the device clock; a board without an RTC may be off, so say so.
    const ts = d.lastTelemetry?.ts;
    return [
      d.deviceId,
      d.status?.state ?? '?',
      board ? [board.family, board.model].filter(Boolean).join(' / ') : '-',
      (d.status?.tags ?? []).join(',') || '-',
      modelsOf(d),
      ts === undefined ? '-' : formatAge(now - ts),
      d.status?.agentVersion ?? '-',
    ];
  });
  return table(['DEVICE', 'STATUS', 'BOARD', 'TAGS', 'MODELS', 'TELEMETRY AGE', 'AGENT'], rows);
}

function mean(m: TelemetryMessage, metric: string, digits = 1): string {
  const v = m.metrics[metric]?.mean;
  return v === undefined ? '-' : v.toFixed(digits);
}

function maxTemp(m: TelemetryMessage): string {
  const temps = Object.entries(m.metrics)
    .filter(([k]) => k.startsWith('temp.'))
    .map(([, s]) => s.max);
  return temps.length === 0 ? '-' : Math.max(...temps).toFixed(1);
}

function tokensPerSec(m: TelemetryMessage): string {
  const parts = Object.entries(m.metrics)
    .filter(([k]) => k.startsWith('slot.') && k.endsWith('.tokens_per_sec'))
    .map(([k, s]) => `${k.slice(5, -'.tokens_per_sec'.length)}=${s.mean.toFixed(1)}`);
  return parts.join(',') || '-';
}

export function formatTelemetryTable(latest: ReadonlyMap<string, TelemetryMessage>, now: number): string {
  const rows = [...latest.values()]
    .sort((a, b) => a.deviceId.localeCompare(b.deviceId))
    .map((m) => [
      m.deviceId,
      String(m.seq),
      formatAge(now - m.ts),
      mean(m, 'cpu.load_pct'),
      mean(m, 'mem.used_pct'),
      maxTemp(m),
      tokensPerSec(m),
      String(m.outbox.queued),
      String(m.outbox.dropped.expired + m.outbox.dropped.overflow + m.outbox.dropped.diskFull),
    ]);
  return table(['DEVICE', 'SEQ', 'AGE', 'CPU%', 'MEM%', 'TEMP°C', 'TOKENS/S', 'QUEUED', 'DROPPED'], rows);
}

export function formatResponses(responses: readonly CommandResponse[]): string {
  return (
    responses
      .map((r) =>
        r.ok
          ? `${r.deviceId}: ok ${JSON.stringify(r.result)}`
          : `${r.deviceId}: error ${r.error?.code}: ${r.error?.message}`,
      )
      .join('\n') + '\n'
  );
}
