import { MnnEdgeError } from '../../lib/errors.js';
import type { HubRepoRef } from './types.js';

// What a person types to name a hub model: `hf://owner/repo[@rev]`, `ms://owner/repo[@rev]`, or the repository's
// web address as the browser shows it (…/tree/<rev>, …/files?Revision=<rev> included).

const PART = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$/;
const REVISION = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/;

function checked(
  hub: HubRepoRef['hub'],
  owner: string,
  name: string,
  revision: string | undefined,
  text: string,
): HubRepoRef {
  if (!PART.test(owner) || !PART.test(name) || name.endsWith('.git'))
    throw new MnnEdgeError('EUSAGE', `Not a hub repository: ${JSON.stringify(text)} (expected owner/name)`);
  if (revision !== undefined && (!REVISION.test(revision) || revision.split('/').includes('..')))
    throw new MnnEdgeError(
      'EUSAGE',
      `Not a usable revision in ${JSON.stringify(text)}: ${JSON.stringify(revision)}`,
    );
  return { hub, owner, name, ...(revision !== undefined ? { revision } : {}) };
}

export function isHubSource(text: string): boolean {
  return (
    /^(hf|ms):\/\//.test(text) ||
    /^https:\/\/(www\.)?(huggingface\.co|hf\.co|modelscope\.cn|modelscope\.ai)\//.test(text)
  );
}

export function parseHubSource(text: string): HubRepoRef {
  const scheme = /^(hf|ms):\/\/([^/@]+)\/([^/@]+)(?:@(.+))?$/.exec(text);
  if (scheme)
    return checked(
      scheme[1] === 'hf' ? 'huggingface' : 'modelscope',
      scheme[2]!,
      scheme[3]!,
      scheme[4],
      text,
    );
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new MnnEdgeError(
      'EUSAGE',
      `Not a hub model: ${JSON.stringify(text)} (use hf://owner/repo[@rev] or ms://owner/repo[@rev])`,
    );
  }
  const host = url.hostname.replace(/^www\./, '');
  const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (host === 'huggingface.co' || host === 'hf.co') {
    const [owner, name, kind, ...rest] = parts;
    const revision =
      (kind === 'tree' || kind === 'blob' || kind === 'resolve') && rest.length > 0 ? rest[0] : undefined;
    if (owner === undefined || name === undefined)
      throw new MnnEdgeError('EUSAGE', `Not a Hugging Face model page: ${text}`);
    return checked('huggingface', owner, name, revision, text);
  }
  if (host === 'modelscope.cn' || host === 'modelscope.ai') {
    const at = parts[0] === 'models' ? 1 : 0;
    const owner = parts[at];
    const name = parts[at + 1];
    if (owner === undefined || name === undefined)
      throw new MnnEdgeError('EUSAGE', `Not a ModelScope model page: ${text}`);
    const revision = url.searchParams.get('Revision') ?? url.searchParams.get('revision') ?? undefined;
    return checked('modelscope', owner, name, revision, text);
  }
  throw new MnnEdgeError(
    'EUSAGE',
    `Not a hub model: ${JSON.stringify(text)} (use hf://owner/repo[@rev] or ms://owner/repo[@rev])`,
  );
}

export function formatHubSource(ref: HubRepoRef): string {
  return `${ref.hub === 'huggingface' ? 'hf' : 'ms'}://${ref.owner}/${ref.name}${ref.revision !== undefined ? `@${ref.revision}` : ''}`;
}
