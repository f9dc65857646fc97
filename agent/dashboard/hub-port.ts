import type { ModelsConfig } from '../../models/config.js';
import { hubClient, hubSettings } from '../../models/hub/clients.js';
import { HF_TOKEN_VARIABLE } from '../../models/hub/huggingface.js';
import { MS_TOKEN_VARIABLE } from '../../models/hub/modelscope.js';
import type { HubPullJobs } from '../../models/hub/pull-jobs.js';
import type { HubName } from '../../models/manifest/types.js';
import type { ModelStore } from '../../models/store/model-store.js';
import { MnnEdgeError } from '../common/errors.js';
import { type RecommendContext, recommendFor, searchHub } from '../models/hub-catalog.js';
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
}

const HUB_OF: Record<'hf' | 'ms', HubName> = { hf: 'huggingface', ms: 'modelscope' };

export function hubPortFrom(deps: HubPortDeps): HubPort {
  const settings = (hub: HubName) => hubSettings(hub, deps.models, deps.env);
  const client = (hub: HubName) => hubClient(hub, settings(hub));
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
    async recommend(query, signal) {
      const context = deps.recommendContext();
      if (context === undefined)
        throw new MnnEdgeError(
          'EUNAVAILABLE',
          'The runtime has not planned for this board yet, so there is no memory budget to rank models by',
        );
      const hub = HUB_OF[query.source];
      const { described } = await searchHub(
        client(hub),
        { words: [], owner: settings(hub).owner, limit: query.limit },
        undefined,
        signal,
      );
      return recommendFor(described, hub, deps.store(), context);
    },
    pulls: deps.pulls,
  };
}
