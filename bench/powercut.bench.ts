// bench/powercut: power cuts that lose nothing (issue 43), the full run. The arm64 Debian 12 guest under QEMU
// (scripts/system-image/powercut.ts) is cut with SIGKILL at a random moment under write load, POWERCUT_CUTS times
// (default 50), and checked after each boot; then the full-disk case. Per kind of write (settings, telemetry, an
// OTA model install, a hub pull): cuts, acknowledged writes lost (target 0), telemetry lost against its bound,
// torn model packages and integrity failures (target 0). Hours under TCG on a busy machine (a cut's cycle is
// 6–11 min: the load, a boot of 2–4 min, the checks), so the run can span sittings: POWERCUT_RECORD (a file or a
// folder, e.g. /work/powercut-record/) keeps every checked cut and each run continues it toward POWERCUT_CUTS,
// the figures over all its cuts; POWERCUT_DEADLINE=HH:MM (UTC) stops a sitting in time (docs/POWERCUT.md).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { imageDir } from '../scripts/system-image/guest.js';
import { deadlineAt, runPowercuts, TELEMETRY } from '../scripts/system-image/powercut.js';
import { RecordRefused } from '../scripts/system-image/powercut-record.js';
import { check } from './lib/stats.js';

const CUTS = Number(process.env['POWERCUT_CUTS'] ?? 50);
const RECORD = process.env['POWERCUT_RECORD'];
const DEADLINE = process.env['POWERCUT_DEADLINE'];

if (!existsSync(join(imageDir(), 'manifest.json'))) {
  console.log(
    `SKIP bench/powercut: no cached arm64 image at ${imageDir()} (npm run test:system builds it, about an hour)`,
  );
  process.exit(0);
}
const report = await runPowercuts({
  cuts: CUTS,
  ...(RECORD ? { record: { path: RECORD, resume: true } } : {}),
  ...(DEADLINE ? { deadlineMs: deadlineAt(DEADLINE) } : {}),
}).catch((err: unknown) => {
  if (!(err instanceof RecordRefused)) throw err;
  console.log(`bench/powercut refused: ${err.message}`);
  process.exit(2);
});
if (report === undefined) process.exit(0);
for (const line of report.lines) console.log(line);
console.log(report.verdict);

const checked = report.cuts.filter((c) => c.error === undefined);
const lost = checked.reduce((s, c) => s + (c.settings?.lost.length ?? 0), 0);
const acked = checked.reduce((s, c) => s + (c.settings?.acked ?? 0), 0);
const telemetry = checked.flatMap((c) => (c.telemetry ? [c.telemetry] : []));
// An unread cut (no /metrics before the cut) fails its row through withinBound; it adds no figure.
const worstMessages = telemetry.reduce((m, t) => Math.max(m, t.lostMessages ?? 0), 0);
const worstDuplicates = telemetry.reduce((m, t) => Math.max(m, t.duplicates), 0);
const duplicateBound = TELEMETRY.flushMaxAcks + TELEMETRY.maxInflight;
const integrityFailures = checked.reduce(
  (s, c) => s + c.integrity.filter((d) => d.result !== 'ok').length,
  0,
);
const rows: Array<[string, number, string, string, boolean]> = [
  ['cuts checked', checked.length, '', `${CUTS}`, checked.length === CUTS],
  [`settings: acknowledged writes lost (of ${acked})`, lost, '', '0', lost === 0],
  [
    'telemetry: most messages lost at a cut',
    worstMessages,
    '',
    `≤ ${TELEMETRY.flushMaxMessages} (flushMaxMessages)`,
    telemetry.every((t) => t.withinBound),
  ],
  [
    'telemetry: most duplicates at a cut',
    worstDuplicates,
    '',
    `≤ ${duplicateBound} (flushMaxAcks + maxInflight)`,
    telemetry.every((t) => t.duplicatesWithinBound),
  ],
  [
    'telemetry: seq reused or missing',
    report.reusedSeq.length + report.seqGaps.length,
    '',
    '0',
    report.reusedSeq.length + report.seqGaps.length === 0,
  ],
  ['sqlite: integrity failures', integrityFailures, '', '0', integrityFailures === 0],
];
const models = checked.flatMap((c) => (c.models ? [c.models] : []));
const modelLost = models.reduce((s, m) => s + m.lost.length, 0);
const modelUnclean = models.reduce((s, m) => s + m.unclean.length, 0);
const halves = models.reduce((s, m) => s + m.store.torn.length + m.store.orphans.length, 0);
const leftovers = models.reduce((s, m) => s + m.store.debris.length, 0);
rows.push(
  ['OTA and hub pull: acknowledged installs lost', modelLost, '', '0', modelLost === 0],
  ['OTA and hub pull: not ended cleanly after the boot', modelUnclean, '', '0', modelUnclean === 0],
  ['model store: torn or orphaned packages', halves, '', '0', halves === 0],
  ['model store: temporary files left', leftovers, '', '0', leftovers === 0],
);
if (report.fullDisk) {
  const f = report.fullDisk;
  const ok = f.clear && f.nothingLost && f.servedWhileFull && f.recovered && f.integrityOk;
  rows.push(['full disk: refused cleanly, nothing lost', ok ? 1 : 0, '', '1', ok]);
}
for (const [figure, value, unit, target, pass] of rows)
  console.log(
    `${figure}: ${value}${unit ? ` ${unit}` : ''} (target ${target}) ${check(figure, value, unit, target, pass)}`,
  );
