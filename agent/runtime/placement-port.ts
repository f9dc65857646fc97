import { type PinOption, pinOptions } from '../plan/pin-options.js';
import type { Placement, PlanBoard, SlotConstraints, SlotName } from '../plan/types.js';
import type { LoadTimeRecord, SlotStats } from './desired/types.js';
import type { LoadSplit } from './engine/load-split.js';
import { runtimeSlotStates, type SlotState } from './measuring/slot-states.js';
import type { InstanceLoad } from './reconciling/load-times.js';
import type { Runtime } from './runtime.js';

// The runtime as the dashboard's placement page sees it: a small port (a view, pin, unpin, replan), so the
// routes can be tested with plain values, and the adapter from the real Runtime.

export interface RuntimeInstanceView {
  key: string;
  status: string;
  pid: number;
  rssBytes: number;
  inflight: number;
  slots: SlotName[];
  /** Once loaded: how long its model took and whether a GPU kernel cache was used. */
  load?: InstanceLoad;
  /** Where its start went: host start, read, MNN's load, warm-up (what is known so far). */
  loadSplit?: LoadSplit;
}

export interface PlacementView {
  placement: Placement | undefined;
  /** Slot → instance key actually serving it now. */
  serving: Partial<Record<SlotName, string>>;
  instances: RuntimeInstanceView[];
  /** Planned key → the fallback that runs instead, and why. */
  fallbacks: Array<{ plannedKey: string; activeKey: string; reason: string }>;
  pins: Partial<Record<SlotName, SlotConstraints>>;
  /**
   * Per slot: the model version an OTA job selected, and which job ("OTA job j-17", "OTA job j-17, rolling
   * back"), so that a version nobody configured can be traced to the job that set it.
   */
  otaVersions?: Partial<Record<SlotName, { version: string; setBy: string }>>;
  /** Every configured slot's state: the one model the overview's health, /v1/models and the fleet also read. */
  slotStates: SlotState[];
  /** What a pin may name on this board: usable ones, and the others with why not. */
  pinOptions: PinOption[];
  /** The latest cold and warm load per model variant and backend since the agent started. */
  loadTimes?: LoadTimeRecord[];
  /** Per slot: requests, TTFT, decode rate and the KV reuse of its generations (hit / partial / miss). */
  slotStats?: SlotStats[];
  /** GPU backends held down after a live failure, until probes in fresh hosts pass. */
  backends?: Array<{
    backend: string;
    status: string;
    reason: string;
    successes: number;
    lastProbe?: string;
  }>;
}

export interface PlacementPort {
  view(): PlacementView;
  pin(slot: SlotName, constraints: SlotConstraints, author: string): Promise<void>;
  unpin(slot: SlotName, author: string): Promise<void>;
  /** Re-plan now (e.g. after installing a model): the "swap" button when nothing is pinned. */
  replan(reason: string): Promise<void>;
}

/**
 * The desired state's OTA author as a person reads it. Runtime.setModelVersion writes `ota:<job id>` and, for
 * a job's rollback, `ota:<job id>:rollback`; anything else (an older row) is shown as it was written.
 */
function otaAuthorText(author: string): string {
  const m = /^ota:(.+?)(:rollback)?$/.exec(author);
  if (!m) return author;
  return m[2] ? `OTA job ${m[1]}, rolling back` : `OTA job ${m[1]}`;
}

/** `board`: the board the runtime plans for, once known (the pin dropdown offers what it can use). */
export function placementPortFrom(
  runtime: Runtime,
  board: () => Pick<PlanBoard, 'backends'> | undefined = () => undefined,
): PlacementPort {
  return {
    view() {
      const s = runtime.state();
      const pins: Partial<Record<SlotName, SlotConstraints>> = {};
      const otaVersions: NonNullable<PlacementView['otaVersions']> = {};
      for (const slot of runtime.document().slots) {
        if (slot.operator) pins[slot.slot] = slot.operator.constraints;
        if (slot.ota)
          otaVersions[slot.slot] = { version: slot.ota.version, setBy: otaAuthorText(slot.ota.author) };
      }
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
          ...(i.load ? { load: i.load } : {}),
          ...(Object.keys(i.loadSplit).length > 0 ? { loadSplit: i.loadSplit } : {}),
        })),
        fallbacks: s.active
          .filter((a) => a.fallback !== undefined)
          .map((a) => ({ plannedKey: a.plannedKey, activeKey: a.active.key, reason: a.fallback!.reason })),
        pins,
        otaVersions,
        slotStates: runtimeSlotStates(runtime),
        pinOptions: pinOptions(board()),
        loadTimes: s.loadTimes,
        slotStats: runtime.slotStats(),
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
