// The platform modules as compose wires them: what the board can do (detect), which models it holds (models)
// and what runs where (runtime), the modules every other one reads.
import type { DownloadPolicy } from '../../lib/download/downloader.js';
import type { AgentConfig } from '../config/schema.js';
import { createDetectModule } from '../detect/module.js';
import type { CommandRegistry } from '../fleet/commands.js';
import { createModelsModule } from '../installed-models/module.js';
import type { AgentBus, PublishEvent } from '../module.js';
import { runtimeSlotStates } from '../runtime/measuring/slot-states.js';
import { createRuntimeModule } from '../runtime/module.js';

/** What the board can do, which models it holds, what runs where: the modules every other one reads. */
export function platformModules(
  commands: CommandRegistry,
  publishEvent: PublishEvent,
  bus: AgentBus,
  /** Hub pulls download under the limits of the `ota` section, as OTA's jobs do (compose reads it). */
  downloadPolicy: (config: AgentConfig) => DownloadPolicy,
) {
  const detect = createDetectModule({ commands });
  const models = createModelsModule({
    commands,
    publishEvent,
    downloadPolicy,
  });
  const runtime = createRuntimeModule({
    detected: detect,
    catalog: () => models.planCatalog(),
    inUse: (refs) => models.inUse(refs),
    installs: models.installs,
    commands,
    publishEvent,
    bus,
  });
  const slotStates = () => {
    const rt = runtime.runtime();
    return rt ? runtimeSlotStates(rt) : [];
  };
  const engine = () => (runtime.runtime() ? runtime.engineAvailability() : undefined);
  return { detect, models, runtime, slotStates, engine };
}
export type Platform = ReturnType<typeof platformModules>;
