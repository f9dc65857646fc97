// The workloads' fleet edge: `restart-workload` restarts the engine hosts serving a workload's slots through
// the runtime's control (in-flight requests on them are cancelled).
import type { CommandRegistry } from '../fleet/commands.js';
import type { SlotName } from '../plan/types.js';

/** The runtime slots each workload uses (a model shared with another workload restarts there too). */
export const WORKLOAD_SLOTS: Record<'voice' | 'vision', SlotName[]> = {
  voice: ['voice.vad', 'voice.wake', 'voice.asr', 'voice.llm', 'voice.omni', 'voice.tts'],
  vision: ['vision.vlm'],
};

export interface RestartControl {
  restart(slots: readonly SlotName[], reason: string): string[];
}

export function registerRestartCommand(
  commands: Pick<CommandRegistry, 'register'> | undefined,
  control: (() => RestartControl | undefined) | undefined,
): void {
  commands?.register<{ workload: 'voice' | 'vision' }>({
    name: 'restart-workload',
    summary: "restart the engine hosts serving a workload's slots (in-flight requests are cancelled)",
    params: {
      type: 'object',
      additionalProperties: false,
      required: ['workload'],
      properties: { workload: { enum: ['voice', 'vision'] } },
    },
    handler: (params) => {
      const rt = control?.();
      if (!rt) throw new Error('the runtime is not running');
      const slots = WORKLOAD_SLOTS[params.workload];
      const restarted = rt.restart(slots, `operator restart-workload ${params.workload}`);
      return { workload: params.workload, slots, restarted };
    },
  });
}
