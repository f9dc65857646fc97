// bench/powercut: power cuts that lose nothing (issue 43), the full run. The arm64 Debian 12 guest under QEMU
// (scripts/system-image/powercut.ts) is cut with SIGKILL at a random moment under write load, POWERCUT_CUTS times
// (default 50), and checked after each boot; then the full-disk case. Per kind of write (settings, telemetry, an
// OTA model install, a hub pull): cuts, acknowledged writes lost (target 0), telemetry lost against its window,
// torn model packages and integrity failures (target 0). Hours under TCG on a busy machine (a cut's cycle is
// 6–7 min: the load, a boot of 3–4 min, the checks).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { imageDir } from '../scripts/system-image/guest.js';
import { runPowercuts, TELEMETRY } from '../scripts/system-image/powercut.js';
import { check } from './lib/stats.js';

const CUTS = Number(process.env['POWERCUT_CUTS'] ?? 50);

if (!existsSync(join(imageDir(), 'manifest.json'))) {
  console.log(
    `SKIP bench/powercut: no cached arm64 image at ${imageDir()} (npm run test:system builds it, about an hour)`,
  );
  process.exit(0);
}
const report = await runPowercuts({ cuts: CUTS });
if (report === undefined) process.exit(0);
for (const line of report.lines) console.log(line);

const checked = report.cuts.filter((c) => c.error === undefined);
const lost = checked.reduce((s, c) => s + (c.settings?.lost.length ?? 0), 0);
const acked = checked.reduce((s, c) => s + (c.settings?.acked ?? 0), 0);
const telemetry = checked.flatMap((c) => (c.telemetry ? [c.telemetry] : []));
const window = (TELEMETRY.flushIntervalMs + TELEMETRY.publishIntervalMs) / 1000;
const worst = telemetry.reduce((m, t) => Math.max(m, t.lostMs - t.offsetErrMs), 0) / 1000;
const integrityFailures = checked.reduce(
  (s, c) => s + c.integrity.filter((d) => d.result !== 'ok').length,
  0,
);
const rows: Array<[string, number, string, string, boolean]> = [
  ['cuts checked', checked.length, '', `${CUTS}`, checked.length === CUTS],
  [`settings: acknowledged writes lost (of ${acked})`, lost, '', '0', lost === 0],
  ['telemetry: worst loss', worst, 's', `≤ ${window}`, worst <= window],
  [
    'telemetry: duplicates beyond the window',
    telemetry.reduce((s, t) => s + t.duplicatesBeyondWindow, 0),
    '',
    '0',
    telemetry.every((t) => t.duplicatesBeyondWindow === 0),
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
