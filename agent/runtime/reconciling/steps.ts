import { mib } from '../../plan/memory.js';
import type { SlotName } from '../../plan/types.js';
import type {
  CurrentInstance,
  CurrentState,
  MemoryView,
  Step,
  StepPlan,
  TargetState,
} from '../desired/types.js';

function slotsServedBy(serving: Partial<Record<SlotName, string>>, key: string): SlotName[] {
  return (Object.entries(serving) as [SlotName, string | undefined][])
    .filter(([, k]) => k === key)
    .map(([s]) => s);
}

function residentBytes(i: CurrentInstance): number {
  return Math.max(i.rssBytes ?? 0, i.spec.memoryBytes);
}

/**
 * Turns (current, target) into the steps that get from one to the other. Pure.
 *
 * A new instance loads and warms up while the old one keeps serving (blue/green) when MemAvailable minus the
 * reserve holds it; otherwise the old instance is drained and stopped first (stop-then-load) and the plan notes
 * why. Instances nothing needs any more are stopped before anything new starts, to free their memory first.
 */
export function planSteps(current: CurrentState, target: TargetState, memory: MemoryView): StepPlan {
  const steps: Step[] = [];
  const notes: string[] = [];
  const strategies: StepPlan['strategies'] = {};
  const serving: Partial<Record<SlotName, string>> = { ...current.serving };
  const live = new Map(current.instances.filter((i) => i.status !== 'failed').map((i) => [i.spec.key, i]));
  const targetKeys = new Set(target.instances.map((i) => i.key));
  let free = memory.availableBytes - memory.reserveBytes;

  // A failed host is already gone (or going): make sure no slot points at it and the process is reaped.
  for (const failed of current.instances.filter((i) => i.status === 'failed')) {
    const slots = slotsServedBy(serving, failed.spec.key);
    if (slots.length > 0) {
      steps.push({ kind: 'switch', slots, to: undefined });
      for (const s of slots) delete serving[s];
    }
    steps.push({ kind: 'stopHost', instance: failed.spec.key });
  }

  const retire = (key: string) => {
    const inst = live.get(key);
    if (!inst) return;
    steps.push(
      { kind: 'drain', instance: key },
      { kind: 'unload', instance: key },
      { kind: 'stopHost', instance: key },
    );
    free += residentBytes(inst);
    live.delete(key);
  };
  /** Old instances that no slot uses any more and the target does not keep. */
  const retireOrphans = () => {
    for (const key of [...live.keys()]) {
      if (!targetKeys.has(key) && slotsServedBy(serving, key).length === 0) retire(key);
    }
  };

  // Slots the target does not serve stop being served first; then what nobody needs goes.
  const unserved = (Object.keys(serving) as SlotName[]).filter((s) => target.serving[s] === undefined);
  if (unserved.length > 0) {
    steps.push({ kind: 'switch', slots: unserved, to: undefined });
    for (const s of unserved) delete serving[s];
  }
  retireOrphans();

  for (const spec of target.instances) {
    const moving = (Object.entries(target.serving) as [SlotName, string][])
      .filter(([s, k]) => k === spec.key && serving[s] !== spec.key)
      .map(([s]) => s);
    if (live.has(spec.key)) {
      if (moving.length > 0) {
        steps.push({ kind: 'switch', slots: moving, to: spec.key });
        for (const s of moving) serving[s] = spec.key;
        retireOrphans();
      }
      continue;
    }
    const replaced = [...new Set(moving.map((s) => serving[s]).filter((k): k is string => k !== undefined))];
    if (spec.memoryBytes <= free || replaced.length === 0) {
      if (spec.memoryBytes > free)
        notes.push(
          `${spec.key}: needs ${mib(spec.memoryBytes)}, ${mib(Math.max(0, free))} available above the reserve; ` +
            'loading anyway, nothing else can be stopped for it',
        );
      if (replaced.length > 0) strategies[spec.key] = 'blue-green';
      steps.push(
        { kind: 'startHost', instance: spec },
        { kind: 'load', instance: spec.key },
        { kind: 'warmUp', instance: spec.key },
      );
      free -= spec.memoryBytes;
      if (moving.length > 0) steps.push({ kind: 'switch', slots: moving, to: spec.key });
      for (const s of moving) serving[s] = spec.key;
      live.set(spec.key, { spec, status: 'ready' });
      retireOrphans();
      continue;
    }
    strategies[spec.key] = 'stop-then-load';
    notes.push(
      `${spec.key}: stop-then-load: it needs ${mib(spec.memoryBytes)} but only ${mib(Math.max(0, free))} is ` +
        `available above the ${mib(memory.reserveBytes)} reserve while ${replaced.join(', ')} is loaded; ` +
        `${moving.join(', ')} wait${moving.length === 1 ? 's' : ''} unserved during the swap`,
    );
    steps.push({ kind: 'switch', slots: moving, to: undefined });
    for (const s of moving) delete serving[s];
    retireOrphans();
    steps.push(
      { kind: 'startHost', instance: spec },
      { kind: 'load', instance: spec.key },
      { kind: 'warmUp', instance: spec.key },
      { kind: 'switch', slots: moving, to: spec.key },
    );
    free -= spec.memoryBytes;
    for (const s of moving) serving[s] = spec.key;
    live.set(spec.key, { spec, status: 'ready' });
  }
  retireOrphans();
  return { steps, notes, strategies };
}

/** One line per step, for logs, events and the dashboard. */
export function describeStep(step: Step): string {
  switch (step.kind) {
    case 'startHost':
      return `start host for ${step.instance.key}`;
    case 'switch':
      return `switch ${step.slots.join(', ')} → ${step.to ?? '(unserved)'}`;
    default:
      return `${step.kind} ${step.instance}`;
  }
}
