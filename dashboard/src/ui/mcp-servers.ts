// The MCP servers the assistant takes tools from (voice.tools.mcp: name, URL, token), as the Settings page edits
// them. Pure (no DOM), so the rules are unit tested. The list is one configuration value, saved whole; its tokens
// are write-only: the page reads them masked (`***`), sends `***` back for "keep the stored one" (the agent puts
// the stored token back by the server's name), and sends a token only when someone typed a new one.

export const MCP_KEY = 'voice.tools.mcp';
export const MASK = '***';

export interface ServerRow {
  name: string;
  url: string;
  /** A new token typed here; empty keeps the stored one (if any). */
  token: string;
  /** The agent holds a token for this server (shown masked). Clearing it sends the entry without a token. */
  stored: boolean;
  /** The name the stored token belongs to: a renamed server needs its token typed again. */
  storedName?: string;
  /** Keys of the entry this page does not edit, sent back as they were. */
  rest: Record<string, unknown>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The rows for the value GET /api/config shows (tokens masked). */
export function serverRows(value: unknown): ServerRow[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).map((e) => {
    const { name, url, token, ...rest } = e;
    const n = typeof name === 'string' ? name : '';
    const stored = typeof token === 'string' && token.length > 0;
    return {
      name: n,
      url: typeof url === 'string' ? url : '',
      token: '',
      stored,
      ...(stored ? { storedName: n } : {}),
      rest,
    };
  });
}

export function emptyServer(): ServerRow {
  return { name: '', url: '', token: '', stored: false, rest: {} };
}

/** The list to send, or what is wrong with it (each problem naming the entry). */
export function serversValue(rows: readonly ServerRow[]): { value: unknown[] } | { errors: string[] } {
  const errors: string[] = [];
  const seen = new Set<string>();
  const value = rows.map((r, i) => {
    const name = r.name.trim();
    const url = r.url.trim();
    const at = `${MCP_KEY}[${i}]${name ? ` (${name})` : ''}`;
    if (name === '') errors.push(`${at}: a server needs a name`);
    else if (seen.has(name)) errors.push(`${at}: the name "${name}" is used twice`);
    seen.add(name);
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
      errors.push(`${at}: the URL must be an http:// or https:// address, got ${JSON.stringify(url)}`);
    const typed = r.token.trim();
    if (typed === '' && r.stored && r.storedName !== undefined && r.storedName !== name)
      errors.push(
        `${at}: renamed from "${r.storedName}", so its stored token stays behind; enter the token again`,
      );
    const token = typed !== '' ? typed : r.stored ? MASK : undefined;
    return { ...r.rest, name, url, ...(token !== undefined ? { token } : {}) };
  });
  return errors.length > 0 ? { errors } : { value };
}

/** JSON with object keys in order, so an entry whose keys came back in another order still compares equal. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isRecord(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** The change to send for the list, if it differs from what the agent showed. */
export function serversChange(
  current: unknown,
  rows: readonly ServerRow[],
): { changed: false } | { changed: true; value: unknown[] } | { errors: string[] } {
  const built = serversValue(rows);
  if ('errors' in built) return built;
  const before = Array.isArray(current) ? current : [];
  return canonical(built.value) === canonical(before)
    ? { changed: false }
    : { changed: true, value: built.value };
}
