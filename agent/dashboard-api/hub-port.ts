import { MnnEdgeError } from '../../lib/errors.js';
import type { ModelsConfig } from '../../models/config.js';
import { hubClient, hubSettings } from '../../models/hub/clients.js';
import type { DescribedRepo } from '../../models/hub/describe.js';
import { HF_TOKEN_VARIABLE } from '../../models/hub/huggingface.js';
import { MS_TOKEN_VARIABLE } from '../../models/hub/modelscope.js';
import type { HubPullJobs } from '../../models/hub/pull-jobs.js';
import type { HubName } from '../../models/manifest/types.js';
import type { ModelStore } from '../../models/store/model-store.js';
import { type RecommendContext, recommendFor, searchHub } from '../installed-models/hub-catalog.js';
import type { HubPort, HubSourceView } from './ports.js';

// The dashboard's "Get models" port over the hub clients (configured endpoints and tokens, as the CLI reads
// them), the model store (what is installed already), the board the runtime plans for, and the agent's pulls.

export interface HubPortDeps {
  models: ModelsConfig;
  env: NodeJS.ProcessEnv;
  store: () => ModelStore | undefined;
  pulls: HubPullJobs;
  /** The board as planned, with policy and probes; undefined while the runtime has not planned. */
  recommendContext: () => RecommendContext | undefined;
  monotonicMs?: () => number;
}

const HUB_OF: Record<'hf' | 'ms', HubName> = { hf: 'huggingface', ms: 'modelscope' };

/** How long a hub's described exports are reused for the recommended list (the page asks on every visit). */
const DESCRIBED_TTL_MS = 5 * 60_000;

export function hubPortFrom(deps: HubPortDeps): HubPort {
  const settings = (hub: HubName) => hubSettings(hub, deps.models, deps.env);
  const client = (hub: HubName) => hubClient(hub, settings(hub));
  // Describing an organisation's exports costs a few requests per repository: kept a while, dropped on an install.
  const described = new Map<string, { atMs: number; value: Promise<DescribedRepo[]> }>();
  deps.pulls.subscribe((p) => {
    if (p.state === 'installed') described.clear();
  });
  // Not tied to one browser's request: others may be waiting for the same answer.
  const describedFor = (hub: HubName, limit: number): Promise<DescribedRepo[]> => {
    const key = `${hub} ${limit}`;
    const now = (deps.monotonicMs ?? (() => performance.now()))();
    const hit = described.get(key);
    if (hit && now - hit.atMs < DESCRIBED_TTL_MS) return hit.value;
    const value = searchHub(client(hub), { words: [], owner: settings(hub).owner, limit }).then(
      (r) => r.described,
    );
    described.set(key, { atMs: now, value });
    // A failure is not kept: the next visit asks again.
    value.catch(() => described.delete(key));
    return value;
  };
  return {
    sources: () =>
      (['hf', 'ms'] as const).map((source): HubSourceView => {
        const hub = HUB_OF[source];
        const s = settings(hub);
        return {
          source,
          hub,
          endpoint: s.endpoint,
          owner: s.owner,
          // Not from a client: a misconfigured endpoint must not hide which variable a token goes in.
          tokenVariable: hub === 'huggingface' ? HF_TOKEN_VARIABLE : MS_TOKEN_VARIABLE,
          hasToken: s.token !== undefined,
        };
      }),
    async search(query, signal) {
      const hub = HUB_OF[query.source];
      const owner = settings(hub).owner;
      const { listings } = await searchHub(
        client(hub),
        { words: query.words, owner, limit: query.limit },
        deps.store(),
        signal,
      );
      return { owner, listings };
    },
    async recommend(query) {
      const context = deps.recommendContext();
      if (context === undefined)
        throw new MnnEdgeError(
          'EUNAVAILABLE',
          'The runtime has not planned for this board yet, so there is no memory budget to rank models by',
        );
      const hub = HUB_OF[query.source];
      return recommendFor(await describedFor(hub, query.limit), hub, deps.store(), context);
    },
    pulls: deps.pulls,
  };
}
