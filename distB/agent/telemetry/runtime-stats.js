// Slot names (`voice.llm`) appear as they are: `slot.<slot>.<metric>` (docs/PROTOCOL.md); consumers split off
// the known `slot.` prefix and metric suffix. Anything outside the metric-name alphabet becomes `_`.
const SAFE = /[^A-Za-z0-9_.-]/g;
/** The numeric gauges of each slot, as metrics to aggregate over the interval. */
export function slotGauges(stats) {
    const out = {};
    for (const s of stats) {
        const p = `slot.${s.slot.replace(SAFE, '_')}`;
        if (s.tokensPerSec !== undefined)
            out[`${p}.tokens_per_sec`] = s.tokensPerSec;
        if (s.ttftMs !== undefined)
            out[`${p}.ttft_ms`] = s.ttftMs;
        if (s.hostRssBytes !== undefined)
            out[`${p}.rss_bytes`] = s.hostRssBytes;
    }
    return out;
}
//# sourceMappingURL=runtime-stats.js.map