// A small reader for BitBake metadata (scripts/check-layer.ts reads meta-mnn-edge with it).
// A small reader for BitBake metadata: assignments with their operators and overrides, inherit lines, and
// shell/python function bodies (skipped). Enough to check what a recipe declares, not to evaluate it.

export interface Assignment {
  name: string;
  /** `:append`, `:pn-foo`, … after the variable name, without the leading colon. */
  overrides: string[];
  op: string;
  value: string;
  line: number;
}

export interface MetadataFile {
  assignments: Assignment[];
  inherits: string[];
  /** Non-comment lines with their numbers (function bodies included), for the host path scan. */
  lines: { text: string; line: number }[];
}

const ASSIGNMENT =
  /^(?:export\s+)?([A-Za-z0-9_${}.\-/+~]+)((?::[A-Za-z0-9_${}.\-+~]+)*)\s*(\?\?=|\?=|:=|\+=|=\+|\.=|=\.|=)\s*"(.*)"\s*$/s;

export function parseMetadata(text: string): MetadataFile {
  const assignments: Assignment[] = [];
  const inherits: string[] = [];
  const lines: { text: string; line: number }[] = [];
  const raw = text.split('\n');
  let inFunction = false;
  for (let i = 0; i < raw.length; i++) {
    const start = i + 1;
    let line = raw[i]!;
    // Continuation lines belong to the statement that starts here.
    while (line.endsWith('\\') && i + 1 < raw.length) line = line.slice(0, -1) + '\n' + raw[++i]!;
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    lines.push({ text: line, line: start });
    if (inFunction) {
      if (/^}\s*$/.test(line)) inFunction = false;
      continue;
    }
    if (
      /^(?:python\s+)?[A-Za-z0-9_${}:.-]*\s*\(\)\s*\{\s*$/.test(trimmed) ||
      /^python\s+[^=]*\{\s*$/.test(trimmed)
    ) {
      inFunction = true;
      continue;
    }
    const inherit = /^inherit\s+(.+)$/.exec(trimmed);
    if (inherit) {
      inherits.push(...inherit[1]!.split(/\s+/).filter(Boolean));
      continue;
    }
    const m = ASSIGNMENT.exec(trimmed);
    if (m) {
      assignments.push({
        name: m[1]!,
        overrides: m[2] ? m[2].slice(1).split(':') : [],
        op: m[3]!,
        value: m[4]!.replace(/\s*\n\s*/g, ' '),
        line: start,
      });
    }
  }
  return { assignments, inherits, lines };
}

/** The value a variable has after the plain (override-free) assignments, in order. */
export function variableValue(meta: MetadataFile, name: string): string | undefined {
  let value: string | undefined;
  for (const a of meta.assignments) {
    if (a.name !== name) continue;
    const appendLike = a.overrides.includes('append') || a.op === '+=' || a.op === '.=';
    const prependLike = a.overrides.includes('prepend') || a.op === '=+' || a.op === '=.';
    if (a.overrides.some((o) => o !== 'append' && o !== 'prepend')) continue;
    const sep = a.op === '.=' || a.op === '=.' || a.overrides.length > 0 ? '' : ' ';
    if (appendLike) value = (value ?? '') + sep + a.value;
    else if (prependLike) value = a.value + sep + (value ?? '');
    else if ((a.op === '?=' || a.op === '??=') && value !== undefined) continue;
    else value = a.value;
  }
  return value?.trim();
}
