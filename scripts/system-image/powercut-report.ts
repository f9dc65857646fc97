// The power-cut run's results: one cut's details, the summary line per kind of write (settings, telemetry, the
// OTA install, the hub pull, SQLite, the full disk) and the verdict. Kept apart from the runner (powercut.ts) so
// that the arithmetic is unit-tested without a guest.
import {
  DATA_DIR,
  type IntegrityResult,
  type SettingsCheck,
  type TelemetryCheck,
} from './powercut-checks.js';
import type { FullDiskResult } from './powercut-fulldisk.js';
import type { ModelCheck } from './powercut-store.js';

/** The documented defaults for the loss window (telemetry.outbox.flushIntervalMs); telemetry once a second so
 *  that a cut always has messages in flight. */
export const TELEMETRY = { flushIntervalMs: 5_000, publishIntervalMs: 1_000, sampleIntervalMs: 500 };

export interface CutResult {
  cut: number;
  /** Seconds of write load before the cut. */
  loadS: number;
  bootS: number;
  serves: boolean;
  settings?: SettingsCheck;
  settingsSent: number;
  settingsRefused: string[];
  telemetry?: TelemetryCheck;
  /** The OTA install and the hub pull in progress at the cut, brought to their end and checked. */
  models?: ModelCheck;
  integrity: IntegrityResult[];
  error?: string;
}

export interface PowercutReport {
  cuts: CutResult[];
  telemetryReceived: number;
  reusedSeq: number[];
  seqGaps: number[];
  fullDisk?: FullDiskResult;
  /** One line per kind of write and one verdict. */
  lines: string[];
  ok: boolean;
}

export function describeCut(r: CutResult): string {
  const bad = r.integrity.filter((d) => d.result !== 'ok');
  const t = r.telemetry;
  return [
    `boot ${r.bootS.toFixed(0)} s`,
    `integrity ${bad.length === 0 ? `ok (${r.integrity.length} databases)` : bad.map((d) => `${d.db}: ${d.result}`).join('; ')}`,
    `settings ${r.settings?.acked ?? 0} acknowledged, ${r.settings?.lost.length ?? '?'} lost${r.settings?.lost.length ? ` (${r.settings.lost.join('; ')})` : ''}`,
    t
      ? `telemetry lost ${(t.lostMs / 1000).toFixed(1)} s (±${(t.offsetErrMs / 1000).toFixed(1)}) of a ${t.window / 1000} s window, ${t.duplicates} duplicates (${t.duplicatesBeyondWindow} beyond the window)`
      : 'telemetry unchecked',
    r.models ? describeModels(r.models) : 'models unchecked',
  ].join('; ');
}

function describeModels(m: ModelCheck): string {
  const s = m.store;
  const resumed =
    m.pull.fetchedBytes !== undefined && m.pull.totalBytes !== undefined
      ? `, ${m.pull.fetchedBytes}/${m.pull.totalBytes} B fetched after the boot`
      : '';
  return [
    `OTA ${m.ota.version} at the cut ${m.ota.atCut}, then ${m.ota.final}`,
    `pull at the cut ${m.pull.atCut}, again after the boot ${m.pull.after}${resumed}`,
    `store ${s.packages} packages, ${s.torn.length} torn, ${s.orphans.length} orphans, ${s.debris.length} temporary files left${s.keptPartials ? ` (and ${s.keptPartials.length} other commits' partial downloads kept for a resume)` : ''}${[...s.torn, ...s.orphans, ...s.debris].length ? ` (${[...s.torn, ...s.orphans, ...s.debris].join('; ')})` : ''}`,
    ...m.lost.map((l) => `LOST ${l}`),
    ...m.unclean.map((u) => `UNCLEAN ${u}`),
  ].join('; ');
}

export function summarize(
  cuts: CutResult[],
  telemetryReceived: number,
  faults: { reused: number[]; gaps: number[] },
  fullDisk?: FullDiskResult,
): PowercutReport {
  const checked = cuts.filter((c) => c.error === undefined);
  const acked = checked.reduce((s, c) => s + (c.settings?.acked ?? 0), 0);
  const lost = checked.reduce((s, c) => s + (c.settings?.lost.length ?? 0), 0);
  const refused = cuts.reduce((s, c) => s + c.settingsRefused.length, 0);
  const telem = checked.flatMap((c) => (c.telemetry ? [c.telemetry] : []));
  const maxLost = telem.reduce((m, t) => Math.max(m, t.lostMs), 0);
  const beyondWindow = telem.filter((t) => !t.withinWindow).length;
  const dups = telem.reduce((s, t) => s + t.duplicates, 0);
  const dupsBeyond = telem.reduce((s, t) => s + t.duplicatesBeyondWindow, 0);
  const dbs = checked.reduce((s, c) => s + c.integrity.length, 0);
  const integrityFailures = checked.reduce(
    (s, c) => s + c.integrity.filter((d) => d.result !== 'ok').length,
    0,
  );
  const problems = checked.filter((c) => c.settings?.problem).length;
  const failedCuts = cuts.filter((c) => c.error !== undefined);
  const models = checked.flatMap((c) => (c.models ? [c.models] : []));
  const otaLost = models.reduce((s, m) => s + m.lost.filter((l) => l.startsWith('OTA')).length, 0);
  const pullLost = models.reduce((s, m) => s + m.lost.filter((l) => !l.startsWith('OTA')).length, 0);
  const otaUnclean = models.filter((m) => m.unclean.some((u) => u.startsWith('OTA'))).length;
  const pullUnclean = models.filter((m) => m.unclean.some((u) => !u.startsWith('OTA'))).length;
  const torn = models.reduce((s, m) => s + m.store.torn.length + m.store.orphans.length, 0);
  const debris = models.reduce((s, m) => s + m.store.debris.length, 0);
  const tally = (xs: string[]) => {
    const counts = new Map<string, number>();
    for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
    return [...counts].map(([k, n]) => `${n}× ${k}`).join(', ') || 'none';
  };
  const otaAtCut = tally(models.map((m) => m.ota.atCut));
  const pullAtCut = tally(models.map((m) => m.pull.atCut.split(' ')[0]!));
  const resumed = models.filter(
    (m) => m.pull.after === 'installed' && (m.pull.fetchedBytes ?? 0) < (m.pull.totalBytes ?? 0),
  ).length;
  const lines = [
    `cuts: ${cuts.length} (${failedCuts.length} where the guest did not come back to be checked${failedCuts.length ? `: ${failedCuts.map((c) => `cut ${c.cut}: ${c.error}`).join('; ')}` : ''})`,
    `settings (HTTP PATCH /api/config): ${checked.length} cuts, ${acked} acknowledged, ${lost} lost (target 0), ${refused} refused while up, ${problems} cuts with a damaged overlay`,
    `telemetry (SQLite outbox → MQTT): ${telem.length} cuts, ${telemetryReceived} messages received, worst loss ${(maxLost / 1000).toFixed(1)} s against a ${(TELEMETRY.flushIntervalMs + TELEMETRY.publishIntervalMs) / 1000} s window (flushIntervalMs + publishIntervalMs), ${beyondWindow} cuts beyond it (target 0), ${dups} duplicates (${dupsBeyond} beyond the window, target 0), ${faults.reused.length} seq numbers reused for another message (target 0), ${faults.gaps.length} seq gaps (target 0)`,
    `OTA model install (MQTT job, throttled download): ${models.length} cuts, state at the cut: ${otaAtCut}; ${otaLost} acknowledged (succeeded) installs lost (target 0), ${otaUnclean} jobs that did not end succeeded after the boot (target 0)`,
    `hub pull (POST /api/hub/pulls, throttled): ${models.length} cuts, state at the cut: ${pullAtCut}; ${pullLost} installed pulls lost (target 0), ${pullUnclean} pulls that did not end cleanly when asked again (target 0), ${resumed} resumed from the partial download`,
    `model store: ${models.length} checks, ${torn} torn or orphaned packages (target 0: every file's sha256 against its manifest), ${debris} temporary files left once the writes ended (target 0)`,
    `sqlite (${DATA_DIR}): ${dbs} integrity checks, ${integrityFailures} failures (target 0)`,
    ...(fullDisk
      ? [
          `full disk (settings change on a filled ${DATA_DIR}): HTTP ${fullDisk.status} ${fullDisk.body}; clear error ${fullDisk.clear ? 'yes' : 'NO'}, nothing lost ${fullDisk.nothingLost ? 'yes' : 'NO'}, served while full ${fullDisk.servedWhileFull ? 'yes' : 'NO'}, changes work once space returns ${fullDisk.recovered ? 'yes' : 'NO'}; integrity ${fullDisk.integrity}; ${fullDisk.details.join('; ')}`,
        ]
      : []),
  ];
  const fullDiskOk =
    fullDisk === undefined ||
    (fullDisk.clear &&
      fullDisk.nothingLost &&
      fullDisk.servedWhileFull &&
      fullDisk.recovered &&
      fullDisk.integrityOk);
  const ok =
    cuts.length > 0 &&
    failedCuts.length === 0 &&
    lost === 0 &&
    refused === 0 &&
    problems === 0 &&
    beyondWindow === 0 &&
    dupsBeyond === 0 &&
    faults.reused.length === 0 &&
    faults.gaps.length === 0 &&
    integrityFailures === 0 &&
    otaLost + pullLost + otaUnclean + pullUnclean + torn + debris === 0 &&
    fullDiskOk;
  return {
    cuts,
    telemetryReceived,
    reusedSeq: faults.reused,
    seqGaps: faults.gaps,
    ...(fullDisk ? { fullDisk } : {}),
    lines,
    ok,
  };
}
