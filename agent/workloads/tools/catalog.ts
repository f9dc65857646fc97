// The tools of one turn: every source's list merged once at the start of the turn and frozen for it, so nothing a
// tool returns can add, rename or re-enable a tool. Names the model sees are unique: the first source to list a
// name keeps it (the built-ins come first), a later one is offered as `<source>_<name>`, and each such clash is
// reported. Tools that act on the board are left out for remote callers unless the settings allow them.
import { errorMessage } from '../../../lib/errors.js';
import type { ToolSpec } from '../shared/chat-model.js';
import type { ToolDefinition, ToolSource } from './types.js';

/** OpenAI's rule for function names; templates and parsers rely on it too. */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface CatalogEntry {
  /** The name the model sees and calls. */
  name: string;
  source: ToolSource;
  /** The name the source knows it by. */
  tool: string;
  definition: ToolDefinition;
}

export interface CatalogReport {
  /** Names two sources both listed, and what the later one is offered as. */
  clashes: Array<{ name: string; sources: [string, string]; offeredAs: string }>;
  /** Tools not offered, each with the reason (bad name or schema, acts for a remote caller). */
  skipped: Array<{ source: string; tool: string; reason: string }>;
  /** Sources whose list failed or timed out: the turn goes on without them. */
  sourceErrors: Array<{ source: string; error: string }>;
}

export interface ToolCatalog extends CatalogReport {
  readonly entries: ReadonlyMap<string, CatalogEntry>;
  readonly specs: readonly ToolSpec[];
}

export interface CatalogOptions {
  remote: boolean;
  allowRemoteActs: boolean;
  /** A source's list past this is given up (an MCP server that hangs at start). */
  listTimeoutMs: number;
  signal?: AbortSignal;
}

function schemaProblem(d: ToolDefinition): string | undefined {
  if (typeof d.name !== 'string' || !NAME.test(d.name))
    return `name ${JSON.stringify(d.name)} is not 1-64 letters, digits, _ or -`;
  const p: unknown = d.parameters;
  if (typeof p !== 'object' || p === null || Array.isArray(p))
    return 'parameters is not a JSON Schema object';
  const type = (p as Record<string, unknown>)['type'];
  if (type !== undefined && type !== 'object')
    return `parameters.type is ${JSON.stringify(type)}, not "object"`;
  return undefined;
}

async function listWithin(source: ToolSource, options: CatalogOptions): Promise<readonly ToolDefinition[]> {
  const signals = [AbortSignal.timeout(options.listTimeoutMs), ...(options.signal ? [options.signal] : [])];
  const signal = AbortSignal.any(signals);
  return await new Promise<readonly ToolDefinition[]>((resolve, reject) => {
    const onAbort = () =>
      reject(
        new Error(
          options.signal?.aborted
            ? 'the turn ended while it listed its tools'
            : `listing its tools took longer than ${options.listTimeoutMs} ms`,
        ),
      );
    signal.addEventListener('abort', onAbort, { once: true });
    source
      .list(signal)
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export async function buildCatalog(
  sources: readonly ToolSource[],
  options: CatalogOptions,
): Promise<ToolCatalog> {
  const lists = await Promise.all(
    sources.map(async (source) => {
      try {
        return { source, tools: await listWithin(source, options) };
      } catch (err) {
        return { source, error: errorMessage(err) };
      }
    }),
  );
  const entries = new Map<string, CatalogEntry>();
  const report: CatalogReport = { clashes: [], skipped: [], sourceErrors: [] };
  for (const listed of lists) {
    const { source } = listed;
    if ('error' in listed) {
      report.sourceErrors.push({ source: source.name, error: listed.error ?? 'unknown error' });
      continue;
    }
    for (const definition of listed.tools) {
      const problem = schemaProblem(definition);
      if (problem) {
        report.skipped.push({ source: source.name, tool: String(definition.name), reason: problem });
        continue;
      }
      if (definition.acts && options.remote && !options.allowRemoteActs) {
        report.skipped.push({
          source: source.name,
          tool: definition.name,
          reason: 'acts on the board: off for remote callers (voice.tools.allowRemoteActs)',
        });
        continue;
      }
      let name = definition.name;
      const holder = entries.get(name);
      if (holder) {
        const offeredAs = `${source.name}_${definition.name}`.slice(0, 64);
        report.clashes.push({ name, sources: [holder.source.name, source.name], offeredAs });
        if (entries.has(offeredAs)) {
          report.skipped.push({ source: source.name, tool: name, reason: `${offeredAs} is taken too` });
          continue;
        }
        name = offeredAs;
      }
      entries.set(name, { name, source, tool: definition.name, definition });
    }
  }
  const specs: ToolSpec[] = [...entries.values()].map((e) => ({
    type: 'function',
    function: {
      name: e.name,
      ...(e.definition.description !== undefined ? { description: e.definition.description } : {}),
      parameters: e.definition.parameters,
    },
  }));
  return { entries, specs: Object.freeze(specs), ...report };
}
