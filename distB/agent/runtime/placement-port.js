import { pinOptions } from '../plan/pin-options.js';
import { runtimeSlotStates } from './slot-states.js';
/** `board`: the board the runtime plans for, once known (the pin dropdown offers what it can use). */
export function placementPortFrom(runtime, board = () => undefined) {
    return {
        view() {
            const s = runtime.state();
            const pins = {};
            for (const slot of runtime.document().slots)
                if (slot.operator)
                    pins[slot.slot] = slot.operator.constraints;
            return {
                placement: s.placement,
                serving: s.serving,
                instances: s.instances.map((i) => ({
                    key: i.key,
                    status: i.status,
                    pid: i.pid,
                    rssBytes: i.rssBytes,
                    inflight: i.inflight,
                    slots: i.slots,
                    ...(Object.keys(i.load).length > 0 ? { load: i.load } : {}),
                })),
                fallbacks: s.active
                    .filter((a) => a.fallback !== undefined)
                    .map((a) => ({ plannedKey: a.plannedKey, activeKey: a.active.key, reason: a.fallback.reason })),
                pins,
                slotStates: runtimeSlotStates(runtime),
                pinOptions: pinOptions(board()),
                backends: s.backends.map((b) => ({
                    backend: b.backend,
                    status: b.status,
                    reason: b.reason,
                    successes: b.successes,
                    ...(b.lastProbe
                        ? { lastProbe: `${b.lastProbe.ok ? 'passed' : 'failed'}: ${b.lastProbe.detail}` }
                        : {}),
                })),
            };
        },
        pin: async (slot, constraints, author) => void (await runtime.pin(slot, constraints, author)),
        unpin: async (slot, author) => void (await runtime.unpin(slot, author)),
        replan: async (reason) => void (await runtime.replan(reason)),
    };
}
//# sourceMappingURL=placement-port.js.map