import type { Placement, SlotName } from '../../plan/types.js';
import type { SwapStrategy, Transition } from '../desired/types.js';
import type { HostExit } from '../engine/engine-port.js';

export interface ReleaseCheck {
  instanceKey: string;
  pid: number;
  processGone: boolean;
  rssAtStopBytes: number;
  /** Private anonymous memory at stop: the part MemAvailable must get back. */
  anonAtStopBytes: number;
  peakRssBytes: number;
  memAvailableBeforeBytes: number;
  memAvailableAfterBytes: number;
  /** How much our other engine hosts grew meanwhile (counted back in: it is not this host's memory). */
  otherHostsGrowthBytes: number;
  /** The process is gone and MemAvailable (plus our other hosts' growth meanwhile) rose by what it held
   *  privately at stop, less 10 % of its peak RSS. */
  ok: boolean;
}

/** A GPU backend held down after a live failure, each probe while it is, and its return. */
export type BackendHealthEvent =
  | { backend: string; status: 'down'; reason: string }
  | { backend: string; status: 'probe'; ok: boolean; detail: string; successes: number; needed: number }
  | { backend: string; status: 'up'; downForMs: number; detail: string };

/** What the dashboard and the fleet hear from the runtime. */
export interface RuntimeEvents {
  [event: string]: unknown;
  placement: { revision: number; placement: Placement; reason: string };
  plan: { steps: string[]; notes: string[]; strategies: Record<string, SwapStrategy> };
  transition: Transition;
  switch: {
    slots: SlotName[];
    from: string[];
    to: string | undefined;
    strategy: SwapStrategy | undefined;
    /** From the start of this reconcile run to the flip. */
    sinceRunStartMs: number;
  };
  drain: { instanceKey: string; waitedMs: number; cancelled: number };
  fallback: { slots: SlotName[]; fromKey: string; toKey: string; reason: string; retryInMs: number };
  recovered: { slots: SlotName[]; key: string };
  'host-exit': { instanceKey: string; pid: number; exit: HostExit; expected: boolean };
  'memory-released': ReleaseCheck;
  'step-failed': { step: string; instanceKey: string; error: string };
  'runner-error': { error: string; consecutiveFailures: number; retryInMs: number };
  /** A GPU backend held down after a live failure, each probe while it is, and its return. */
  'backend-health': BackendHealthEvent;
  /** A request retried on the fallback (nothing streamed yet) or cut short with finish reason backend-lost. */
  'request-rescued': {
    slot: SlotName;
    outcome: 'retried' | 'cut-short';
    reason: string;
    streamedChars: number;
  };
}
