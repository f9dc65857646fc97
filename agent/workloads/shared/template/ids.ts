// Ids of the calls the model makes. OpenAI's are `call_` and 24 letters or digits; Mistral's templates refuse
// any id that is not exactly 9 alphanumerics, so a Mistral-format model gets those.
import { randomInt } from 'node:crypto';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function alnum(n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += ALNUM[randomInt(ALNUM.length)];
  return out;
}

export function newToolCallId(style: 'any' | 'alnum9' = 'any'): string {
  return style === 'alnum9' ? alnum(9) : `call_${alnum(24)}`;
}
