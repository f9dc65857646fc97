import type { Writable } from 'node:stream';
import type { PullProgress } from '../../../models/hub/pull.js';
import { RateMeter } from '../../../models/hub/rate-meter.js';
import { formatBytes as bytes } from './format.js';

export { RateMeter };

// The pull's progress for people: a bar redrawn in place on a terminal (bytes, rate, ETA, file), one plain line
// per tenth of the way (and per file) when stderr is a pipe or a log, so logs stay readable.

export function formatEta(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '--';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function pullProgressLine(p: PullProgress, rate: number | undefined, width = 24): string {
  const frac = p.total > 0 ? Math.min(1, p.done / p.total) : 0;
  const full = Math.round(frac * width);
  const eta = rate !== undefined && rate > 0 ? (p.total - p.done) / rate : undefined;
  return (
    `[${'#'.repeat(full)}${'.'.repeat(width - full)}] ${(frac * 100).toFixed(0).padStart(3)}%  ` +
    `${bytes(p.done)} / ${bytes(p.total)}  ${rate !== undefined ? `${bytes(rate)}/s` : '-- /s'}  ETA ${formatEta(eta)}` +
    (p.file !== undefined ? `  ${p.file} (${p.fileIndex}/${p.fileCount})` : '')
  );
}

export function progressPrinter(
  out: Writable & { isTTY?: boolean },
  now: () => number = () => performance.now(),
) {
  const tty = out.isTTY === true;
  const meter = new RateMeter();
  let lastDraw = 0;
  let lastTenth = -1;
  let lastFile: string | undefined;
  return {
    update(p: PullProgress): void {
      if (p.phase !== 'downloading') return;
      const t = now();
      const rate = meter.add(t, p.done);
      if (tty) {
        if (t - lastDraw < 100 && p.done < p.total) return;
        lastDraw = t;
        out.write(`\r\x1b[2K${pullProgressLine(p, rate)}`);
        return;
      }
      const tenth = p.total > 0 ? Math.floor((p.done / p.total) * 10) : 10;
      if (tenth === lastTenth && p.file === lastFile) return;
      lastTenth = tenth;
      lastFile = p.file;
      out.write(`${pullProgressLine(p, rate, 10)}\n`);
    },
    finish(): void {
      if (tty && lastDraw > 0) out.write('\r\x1b[2K');
    },
  };
}
