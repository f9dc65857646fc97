// The workloads module as compose wires it: every model it uses is a runtime slot, a wake-word package's
// keywords come from the model store, and the board's MCP server reports the runtime's slots and the detection.
import type { CommandRegistry } from '../fleet/commands.js';
import type { SessionLimiter } from '../http/session-limits.js';
import type { PublishEvent } from '../module.js';
import { createWorkloadsModule, type WorkloadsModule } from '../workloads/module.js';
import { boardStatusOf } from '../workloads/tools/board-status.js';
import type { Platform } from './platform.js';

export function workloadsModule(
  platform: Platform,
  shared: {
    agentVersion: string;
    commands: CommandRegistry;
    sessions: SessionLimiter;
    publishEvent: PublishEvent;
  },
): WorkloadsModule {
  const { runtime } = platform;
  return createWorkloadsModule({
    runtime: () => runtime.runtime(),
    slotStates: platform.slotStates,
    control: () => runtime.runtime(),
    // A wake-word package's keywords are read from its installed files.
    packageDir: (ref) => {
      const store = platform.models.models()?.store;
      return store?.get(ref) ? store.packageDir(ref) : undefined;
    },
    sessions: shared.sessions,
    publishEvent: shared.publishEvent,
    commands: shared.commands,
    agentVersion: shared.agentVersion,
    // The MCP server's board_status; announce stays off for remote clients until the settings enable it.
    mcpServer: {
      status: boardStatusOf({
        slotStates: platform.slotStates,
        capabilities: () => platform.detect.capabilities(),
        version: shared.agentVersion,
      }),
    },
    pulls: () => platform.models.pulls(),
  });
}
