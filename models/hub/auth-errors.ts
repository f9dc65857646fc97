import { MnnEdgeError } from '../../lib/errors.js';
import type { HubResponse } from './http.js';

// The same answers mean the same things on both hubs: 401/403 is a gated or private repository (or a token
// without access), 404 an unknown repository or revision. Each error says what to do about it.

export interface HubErrorContext {
  hubTitle: string;
  repo: string;
  revision?: string;
  tokenVariable: string;
  hasToken: boolean;
  /** The hub's own word on the failure, when it sent one. */
  detail?: string;
}

export function hubStatusError(res: HubResponse, what: string, ctx: HubErrorContext): MnnEdgeError {
  const detail = ctx.detail ? ` (${ctx.hubTitle} says: ${ctx.detail.slice(0, 200)})` : '';
  if (res.status === 401 || res.status === 403) {
    return ctx.hasToken
      ? new MnnEdgeError(
          'EHUBAUTH',
          `${ctx.hubTitle} refused ${ctx.repo}: the token in ${ctx.tokenVariable} has no access to it (gated, private or not accepted yet)${detail}`,
          { status: res.status, variable: ctx.tokenVariable },
        )
      : new MnnEdgeError(
          'EHUBAUTH',
          `${ctx.repo} on ${ctx.hubTitle} needs a token (gated or private, or it does not exist): set ${ctx.tokenVariable}${detail}`,
          { status: res.status, variable: ctx.tokenVariable },
        );
  }
  if (res.status === 404)
    return new MnnEdgeError(
      'EHUBNOTFOUND',
      `${ctx.hubTitle} has no ${ctx.revision !== undefined ? `revision ${ctx.revision} of ` : ''}${ctx.repo}${detail}`,
      { status: 404 },
    );
  return new MnnEdgeError(
    'EHUBRESPONSE',
    `${what} failed with HTTP ${res.status} from ${ctx.hubTitle}${detail}`,
    {
      status: res.status,
    },
  );
}
