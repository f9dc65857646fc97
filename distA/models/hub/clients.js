import { defaultHubHttpPolicy } from './http.js';
import { HF_DEFAULT_ENDPOINT, HuggingFaceClient } from './huggingface.js';
import { ModelScopeClient, MS_DEFAULT_ENDPOINT } from './modelscope.js';
// Which hub endpoint and token to use. The configuration names a mirror explicitly; otherwise the variables
// the hubs' own tools read (HF_ENDPOINT, HF_TOKEN; MODELSCOPE_DOMAIN, MODELSCOPE_API_TOKEN) apply.
/** The organisations that publish MNN's own exports. */
export const DEFAULT_OWNERS = { huggingface: 'taobao-mnn', modelscope: 'MNN' };
function nonEmpty(v) {
    return v !== undefined && v.trim() !== '' ? v.trim() : undefined;
}
export function hubSettings(hub, models, env) {
    const policy = {
        ...defaultHubHttpPolicy,
        allowLoopbackHttp: models.sources?.allowLoopbackHttp === true,
    };
    if (hub === 'huggingface') {
        const token = nonEmpty(env['HF_TOKEN']) ?? nonEmpty(env['HUGGING_FACE_HUB_TOKEN']);
        return {
            endpoint: models.sources?.hf?.endpoint ?? nonEmpty(env['HF_ENDPOINT']) ?? HF_DEFAULT_ENDPOINT,
            ...(token !== undefined ? { token } : {}),
            owner: models.sources?.hf?.owner ?? DEFAULT_OWNERS.huggingface,
            policy,
        };
    }
    const token = nonEmpty(env['MODELSCOPE_API_TOKEN']);
    const domain = nonEmpty(env['MODELSCOPE_DOMAIN']);
    return {
        endpoint: models.sources?.ms?.endpoint ?? (domain !== undefined ? `https://${domain}` : MS_DEFAULT_ENDPOINT),
        ...(token !== undefined ? { token } : {}),
        owner: models.sources?.ms?.owner ?? DEFAULT_OWNERS.modelscope,
        policy,
    };
}
export function hubClient(hub, settings) {
    const options = {
        endpoint: settings.endpoint,
        policy: settings.policy,
        ...(settings.token !== undefined ? { token: settings.token } : {}),
    };
    return hub === 'huggingface' ? new HuggingFaceClient(options) : new ModelScopeClient(options);
}
//# sourceMappingURL=clients.js.map