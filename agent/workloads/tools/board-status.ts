// The board's state as the MCP server's `board_status` tool answers it: what serves each slot and on which
// backend, which compute backends the board has, and its temperatures now. Compact on purpose: a model reads it.
import type { Capabilities } from '../../../lib/capabilities.js';
import type { SlotState } from '../../runtime/measuring/slot-states.js';
import { thermalSampler } from '../../telemetry/samplers.js';

export interface BoardStatusSources {
  slotStates?: () => readonly SlotState[];
  capabilities?: () => Capabilities | undefined;
  /** The filesystem root whose /sys/class/thermal is read (`/` on a board; the capabilities' root if known). */
  root?: string;
  version?: string;
}

export function boardStatusOf(src: BoardStatusSources): () => Promise<Record<string, unknown>> {
  return async () => {
    const caps = src.capabilities?.();
    const temps = await thermalSampler(src.root ?? caps?.root ?? '/').sample();
    return {
      ...(src.version ? { agentVersion: src.version } : {}),
      board: caps?.board.model.value ?? null,
      soc: caps?.soc.name.value ?? null,
      slots: (src.slotStates?.() ?? []).map((s) => ({
        slot: s.slot,
        phase: s.phase,
        servable: s.servable,
        model: s.servedBy?.label ?? s.planned?.label ?? null,
        backend: s.servedBy?.backend ?? s.planned?.backend ?? s.builtin ?? null,
        ...(s.reason ? { reason: s.reason } : {}),
      })),
      backends: (caps?.backends ?? []).map((b) => ({
        backend: b.backend,
        usable: b.usable,
        why: b.reasons[0] ?? '',
      })),
      temperaturesC: Object.fromEntries(
        Object.entries(temps).map(([k, v]) => [k.replace(/^temp\./, '').replace(/_c$/, ''), v]),
      ),
    };
  };
}
