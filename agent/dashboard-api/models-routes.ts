// The dashboard's installed models and the installs under way, with the first step shown when there are none.
import { type RouteKit, unavailable } from './route-kit.js';

export function registerModelsRoutes(kit: RouteKit): void {
  const { options, get } = kit;
  const { sources } = options;
  get('/api/models', async (ctx) => {
    if (sources.models === undefined)
      throw unavailable('models', 'The model store is not available on this agent');
    const installed = await sources.models.installed();
    ctx.json(200, {
      installed,
      installs: sources.models.installs(),
      // Shown by the empty state, so the first step is on screen rather than in a manual.
      hint:
        installed.length === 0
          ? `No models installed. ${sources.hub ? 'Get one from a model hub under "Get models" below, or pull' : 'Pull'} the first ones on the device with \`mnn-edge models pull hf://taobao-mnn/<repo>\` (or a package: \`mnn-edge models pull <package.tar>\`; import a directory with \`mnn-edge models import <dir>\`), or send an OTA job from the fleet.`
          : undefined,
    });
  });
}
