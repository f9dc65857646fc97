import { hubClient, hubSettings } from '../../models/hub/clients.js';
import { MnnEdgeError } from '../common/errors.js';
import { recommendFor, searchHub } from '../models/hub-catalog.js';
const HUB_OF = { hf: 'huggingface', ms: 'modelscope' };
export function hubPortFrom(deps) {
    const settings = (hub) => hubSettings(hub, deps.models, deps.env);
    const client = (hub) => hubClient(hub, settings(hub));
    return {
        sources: () => ['hf', 'ms'].map((source) => {
            const hub = HUB_OF[source];
            const s = settings(hub);
            return {
                source,
                hub,
                endpoint: s.endpoint,
                owner: s.owner,
                tokenVariable: client(hub).tokenVariable,
                hasToken: s.token !== undefined,
            };
        }),
        async search(query, signal) {
            const hub = HUB_OF[query.source];
            const owner = settings(hub).owner;
            const { listings } = await searchHub(client(hub), { words: query.words, owner, limit: query.limit }, deps.store(), signal);
            return { owner, listings };
        },
        async recommend(query, signal) {
            const context = deps.recommendContext();
            if (context === undefined)
                throw new MnnEdgeError('EUNAVAILABLE', 'The runtime has not planned for this board yet, so there is no memory budget to rank models by');
            const hub = HUB_OF[query.source];
            const { described } = await searchHub(client(hub), { words: [], owner: settings(hub).owner, limit: query.limit }, undefined, signal);
            return recommendFor(described, hub, deps.store(), context);
        },
        pulls: deps.pulls,
    };
}
//# sourceMappingURL=hub-port.js.map