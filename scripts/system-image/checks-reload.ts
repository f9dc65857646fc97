// `systemctl reload mnn-edge` applies settings: the model an operator imported with the CLI and the slot and tags
// written into /etc/mnn-edge/agent.json take effect through the unit's ExecReload (SIGHUP to the main process:
// re-read the file and the overlay, detect again, replan), seen from the host through the HTTP API, with the
// same main process (a reload, not a restart).
import type { Guest } from './guest.js';
import { sh } from './guest.js';
import { type AgentApi, api, type Checks, editAgentJson, unitProcess, waitFor } from './tier.js';

/** Where the packages' disk (label MNNDEBS) is mounted again to read the model files it carries. */
export const MODELS_MOUNT = '/run/mnn-edge-system-models';
export const TIER_TAG = 'system-tier';
export const LLM_SLOT = 'voice.llm';

export async function importModel(guest: Guest, dir: string, id: string, version: string): Promise<string> {
  await sh(
    guest,
    `mkdir -p ${MODELS_MOUNT} && (mountpoint -q ${MODELS_MOUNT} || mount -o ro /dev/disk/by-label/MNNDEBS ${MODELS_MOUNT})`,
  );
  // As the service's user, so the store's files stay the agent's own.
  return sh(
    guest,
    `runuser -u mnn-edge -- mnn-edge models import ${MODELS_MOUNT}/${dir} --id ${id} --version ${version} --config /etc/mnn-edge/agent.json 2>&1`,
    10 * 60_000,
  );
}

export async function reloadAppliesSettings(guest: Guest, agent: AgentApi, checks: Checks): Promise<void> {
  let started = Date.now();
  const imported = await importModel(guest, 'tiny-llm', 'tiny-llm', '1.0.0');
  checks.check(
    '`mnn-edge models import` of tiny-llm in the guest',
    /tiny-llm@1\.0\.0/.test(imported),
    imported.trim().split('\n').at(-1) ?? '',
    started,
  );

  started = Date.now();
  const before = await unitProcess(guest);
  await editAgentJson(guest, (config) => {
    config['tags'] = [TIER_TAG];
    config['slots'] = { [LLM_SLOT]: { model: 'tiny-llm' } };
  });
  await sh(guest, 'systemctl reload mnn-edge');
  const tags = await waitFor('the tags from agent.json in /api/session', 5 * 60_000, async () => {
    const s = await api<{ device: { tags: string[] } }>(agent, '/api/session');
    return s.device.tags.includes(TIER_TAG) ? s.device.tags : undefined;
  });
  const models = await waitFor('tiny-llm served (/v1/models)', 20 * 60_000, async () => {
    const list = await api<{ data: { id: string }[] }>(agent, '/v1/models');
    return list.data.some((m) => m.id === 'tiny-llm') ? list.data.map((m) => m.id) : undefined;
  });
  const after = await unitProcess(guest);
  checks.check(
    '`systemctl reload` applies agent.json (tags, a slot) in the same process',
    after.pid === before.pid && after.pid > 0 && after.restarts === before.restarts,
    `tags ${JSON.stringify(tags)}, /v1/models ${JSON.stringify(models)}, MainPID ${before.pid} -> ${after.pid}, NRestarts ${after.restarts}`,
    started,
  );
}
