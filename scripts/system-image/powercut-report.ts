// The power-cut run's results: one cut's details, the summary line per kind of write (settings, telemetry, the
// OTA install, the hub pull, SQLite, the full disk) and the verdict. Kept apart from the runner (powercut.ts) so
// that the arithmetic is unit-tested without a guest.
import { defaultTelemetryConfig } from '../../agent/config/sections/telemetry.js';
import {
  DATA_DIR,
  type IntegrityResult,
  type SettingsCheck,
  type TelemetryCheck,
} from './powercut-checks.js';
import type { FullDiskResult } from './powercut-fulldisk.js';
import type { ModelCheck } from './powercut-store.js';

/** Telemetry once a second, so that a cut always has messages in flight, and the outbox's documented defaults
 *  (the bounds the check holds the agent to are made of them; the run sets them explicitly in the guest). */
export const TELEMETRY = {
  flushIntervalMs: defaultTelemetryConfig.outbox.flushIntervalMs,
  flushMaxMessages: defaultTelemetryConfig.outbox.flushMaxMessages,
  flushMaxAcks: defaultTelemetryConfig.outbox.flushMaxAcks,
  maxInflight: defaultTelemetryConfig.outbox.maxInflight,
  publishIntervalMs: 1_000,
  sampleIntervalMs: 500,
};

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

/** One sitting's telemetry at the host broker (a run; a resumed record holds several). */
export interface SittingTelemetry {
  received: number;
  reused: number[];
  gaps: number[];
}

export interface PowercutReport {
  cuts: CutResult[];
  telemetryReceived: number;
  reusedSeq: number[];
  seqGaps: number[];
  fullDisk?: FullDiskResult;
  /** One line per kind of write. */
  lines: string[];
  /** PASS or FAIL, what was checked, and the rule. */
  verdict: string;
  ok: boolean;
}

/** The verdict's rule, printed with it. */
export const VERDICT_RULE =
  'PASS when at least one cut or the full-disk case was checked and every check that ran met its target; FAIL when a check missed, a cut could not be checked, or nothing was checked';

export function describeCut(r: CutResult): string {
  const bad = r.integrity.filter((d) => d.result !== 'ok');
  const t = r.telemetry;
  return [
    `boot ${r.bootS.toFixed(0)} s`,
    `integrity ${bad.length === 0 ? `ok (${r.integrity.length} databases)` : bad.map((d) => `${d.db}: ${d.result}`).join('; ')}`,
    `settings ${r.settings?.acked ?? 0} acknowledged, ${r.settings?.lost.length ?? '?'} lost${r.settings?.lost.length ? ` (${r.settings.lost.join('; ')})` : ''}`,
    t
      ? `telemetry lost ${t.lostMessages ?? '?'} messages (bound ${t.messageBound}; blind ${(t.blindMs / 1000).toFixed(1)} s before the cut), newest survivor ${(t.lostMs / 1000).toFixed(1)} s (±${(t.offsetErrMs / 1000).toFixed(1)}) before the cut (on-time window ${t.window / 1000} s), ${t.duplicates} duplicates (bound ${t.duplicateBound}; ${t.duplicatesBeyondWindow} beyond the on-time window)`
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

export interface SummaryInput {
  cuts: CutResult[];
  sittings: SittingTelemetry[];
  fullDisk?: FullDiskResult;
  /** Cuts asked for (--cuts); a run stopped by its deadline checked fewer. */
  asked?: number;
}

export function summarize(input: SummaryInput): PowercutReport {
  const { cuts, sittings, fullDisk } = input;
  const telemetryReceived = sittings.reduce((s, x) => s + x.received, 0);
  const reused = sittings.flatMap((x) => x.reused);
  const gaps = sittings.flatMap((x) => x.gaps);
  const checked = cuts.filter((c) => c.error === undefined);
  const acked = checked.reduce((s, c) => s + (c.settings?.acked ?? 0), 0);
  const lost = checked.reduce((s, c) => s + (c.settings?.lost.length ?? 0), 0);
  const refused = cuts.reduce((s, c) => s + c.settingsRefused.length, 0);
  const telem = checked.flatMap((c) => (c.telemetry ? [c.telemetry] : []));
  const maxLostMessages = telem.reduce((m, t) => Math.max(m, t.lostMessages ?? 0), 0);
  const unread = telem.filter((t) => t.lostMessages === undefined).length;
  const beyondBound = telem.filter((t) => !t.withinBound).length;
  const maxLost = telem.reduce((m, t) => Math.max(m, t.lostMs), 0);
  const beyondWindow = telem.filter((t) => !t.withinWindow).length;
  const dups = telem.reduce((s, t) => s + t.duplicates, 0);
  const maxDups = telem.reduce((m, t) => Math.max(m, t.duplicates), 0);
  const dupsBeyondBound = telem.filter((t) => !t.duplicatesWithinBound).length;
  const dupsBeyondWindow = telem.reduce((s, t) => s + t.duplicatesBeyondWindow, 0);
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
  const otaFinal = tally(models.map((m) => m.ota.final));
  const pullAtCut = tally(models.map((m) => m.pull.atCut.split(' ')[0]!));
  const pullAfter = tally(models.map((m) => m.pull.after));
  const resumed = models.filter(
    (m) => m.pull.after === 'installed' && (m.pull.fetchedBytes ?? 0) < (m.pull.totalBytes ?? 0),
  ).length;
  const lines = [
    `cuts: ${cuts.length}${input.asked !== undefined ? ` of ${input.asked} asked` : ''} (${failedCuts.length} where the guest did not come back to be checked${failedCuts.length ? `: ${failedCuts.map((c) => `cut ${c.cut}: ${c.error}`).join('; ')}` : ''})${sittings.length > 1 ? `, over ${sittings.length} sittings` : ''}`,
    `settings (HTTP PATCH /api/config): ${checked.length} cuts, ${acked} acknowledged, ${lost} lost (target 0), ${refused} refused while up, ${problems} cuts with a damaged overlay`,
    `telemetry (SQLite outbox → MQTT): ${telem.length} cuts, ${telemetryReceived} messages received; lost at a cut: worst ${maxLostMessages} messages against flushMaxMessages ${TELEMETRY.flushMaxMessages} (the bound that holds with late timers), ${beyondBound} cuts beyond it (target 0${unread ? `; ${unread} unread` : ''}); newest survivor at worst ${(maxLost / 1000).toFixed(1)} s before the cut, ${beyondWindow} cuts beyond the ${(TELEMETRY.flushIntervalMs + TELEMETRY.publishIntervalMs) / 1000} s on-time window (flushIntervalMs + publishIntervalMs: a figure, late timers exceed it); ${dups} duplicates, worst ${maxDups} at a cut against flushMaxAcks + maxInflight ${TELEMETRY.flushMaxAcks + TELEMETRY.maxInflight}, ${dupsBeyondBound} cuts beyond it (target 0; ${dupsBeyondWindow} first sent before the on-time window); ${reused.length} seq numbers reused for another message (target 0), ${gaps.length} seq gaps (target 0)`,
    `OTA model install (MQTT job, throttled download): ${models.length} cuts, state at the cut: ${otaAtCut}; after the boot: ${otaFinal}; ${otaLost} acknowledged (succeeded) installs lost (target 0), ${otaUnclean} jobs that did not end succeeded after the boot (target 0)`,
    `hub pull (POST /api/hub/pulls, throttled): ${models.length} cuts, state at the cut: ${pullAtCut}; asked again after the boot: ${pullAfter}; ${pullLost} installed pulls lost (target 0), ${pullUnclean} pulls that did not end cleanly when asked again (target 0), ${resumed} resumed from the partial download`,
    `model store: ${models.length} checks, ${torn} torn or orphaned packages (target 0: every file's sha256 against its manifest), ${debris} temporary files left once the writes ended (target 0)`,
    `sqlite (${DATA_DIR}): ${dbs} integrity checks, ${integrityFailures} failures (target 0)`,
    ...(fullDisk
      ? [
          `full disk (settings change on a filled ${DATA_DIR}): HTTP ${fullDisk.status} ${fullDisk.body}; clear error ${fullDisk.clear ? 'yes' : 'NO'}, nothing lost ${fullDisk.nothingLost ? 'yes' : 'NO'}, served while full ${fullDisk.servedWhileFull ? 'yes' : 'NO'}, changes work once space returns ${fullDisk.recovered ? 'yes' : 'NO'}; integrity ${fullDisk.integrity}; ${fullDisk.details.join('; ')}`,
        ]
      : ['full disk: not run']),
  ];
  const fullDiskOk =
    fullDisk === undefined ||
    (fullDisk.clear &&
      fullDisk.nothingLost &&
      fullDisk.servedWhileFull &&
      fullDisk.recovered &&
      fullDisk.integrityOk);
  const misses: Array<[string, boolean]> = [
    ['cuts not checked', failedCuts.length > 0],
    ['settings lost', lost > 0],
    ['settings refused', refused > 0],
    ['damaged overlay', problems > 0],
    ['telemetry lost beyond flushMaxMessages', beyondBound > 0],
    ['duplicates beyond flushMaxAcks + maxInflight', dupsBeyondBound > 0],
    ['seq reused', reused.length > 0],
    ['seq gaps', gaps.length > 0],
    ['integrity', integrityFailures > 0],
    ['OTA', otaLost + otaUnclean > 0],
    ['hub pull', pullLost + pullUnclean > 0],
    ['model store', torn + debris > 0],
    ['full disk', !fullDiskOk],
  ];
  const missed = misses.filter(([, m]) => m).map(([name]) => name);
  const ran = [
    ...(checked.length > 0 ? [`${checked.length} cut${checked.length === 1 ? '' : 's'} checked`] : []),
    ...(fullDisk ? ['the full-disk case'] : []),
  ];
  const ok = ran.length > 0 && missed.length === 0;
  const verdict = `${ok ? 'PASS' : 'FAIL'}: ${ran.length ? ran.join(' and ') : 'nothing checked'}${missed.length ? `; missed: ${missed.join(', ')}` : ''} (rule: ${VERDICT_RULE})`;
  return {
    cuts,
    telemetryReceived,
    reusedSeq: reused,
    seqGaps: gaps,
    ...(fullDisk ? { fullDisk } : {}),
    lines,
    verdict,
    ok,
  };
}
