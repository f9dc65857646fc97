import { MnnEdgeError } from '../../agent/common/errors.js';
export function hubStatusError(res, what, ctx) {
    const detail = ctx.detail ? ` (${ctx.hubTitle} says: ${ctx.detail.slice(0, 200)})` : '';
    if (res.status === 401 || res.status === 403) {
        return ctx.hasToken
            ? new MnnEdgeError('EHUBAUTH', `${ctx.hubTitle} refused ${ctx.repo}: the token in ${ctx.tokenVariable} has no access to it (gated, private or not accepted yet)${detail}`, { status: res.status, variable: ctx.tokenVariable })
            : new MnnEdgeError('EHUBAUTH', `${ctx.repo} on ${ctx.hubTitle} needs a token (gated or private, or it does not exist): set ${ctx.tokenVariable}${detail}`, { status: res.status, variable: ctx.tokenVariable });
    }
    if (res.status === 404)
        return new MnnEdgeError('EHUBNOTFOUND', `${ctx.hubTitle} has no ${ctx.revision !== undefined ? `revision ${ctx.revision} of ` : ''}${ctx.repo}${detail}`, { status: 404 });
    return new MnnEdgeError('EHUBRESPONSE', `${what} failed with HTTP ${res.status} from ${ctx.hubTitle}${detail}`, {
        status: res.status,
    });
}
//# sourceMappingURL=auth-errors.js.map