import { configKey } from './config-key.js';
import { mib } from './memory.js';
/** The placement as people read it (CLI, logs, docs): one block per slot and instance, every reason shown. */
export function explainPlacement(placement) {
    const lines = [];
    const b = placement.budget;
    lines.push(`board ${placement.boardId}, engine ${placement.engineVersion}`);
    lines.push(`${b.reason}; planned ${mib(b.plannedBytes)}`);
    lines.push('');
    lines.push('slots:');
    const width = Math.max(...placement.slots.map((s) => s.slot.length), 4);
    for (const s of placement.slots) {
        const target = s.instanceKey ?? s.builtin ?? '-';
        lines.push(`  ${s.slot.padEnd(width)}  ${s.status.padEnd(8)}  ${target}`);
        for (const r of s.reasons.slice(s.instanceKey ? 1 : 0))
            lines.push(`  ${''.padEnd(width)}    ${r}`);
    }
    for (const i of placement.instances) {
        lines.push('');
        lines.push(`instance ${i.key}  (priority ${i.priority}; ${i.slots.join(', ')})`);
        for (const r of i.reasons)
            lines.push(`  - ${r}`);
        if (i.fallback.length > 0) {
            lines.push('  fallback:');
            i.fallback.forEach((c, n) => {
                lines.push(`    ${n + 1}. ${c.variantId} ${configKey(c.config)}: ${c.summary}`);
            });
        }
    }
    return lines.join('\n');
}
//# sourceMappingURL=explain.js.map