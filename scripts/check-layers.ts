// `tsx scripts/check-layers.ts [--check]`: the shape of agent/ drawn from its imports. A part is a folder (the
// files directly at agent/ are one part each: the composition root). Parts are ordered so that each sits above
// what it imports; an import that has to run back up that order is a place where two parts lean on each other.
// With --features a top folder and its subfolders count as one part. Prints the parts, their layers, the imports
// running back up, file-level import cycles, the longest files and functions. With --cycles it exits 1 when files
// import each other in a circle; with --check (npm run check:layers, check:generated) also when a figure passes
// its limit (LIMITS): more than 3 imports running back up, a hand-written file over 500 lines, a function over 120.
// test/unit/layers.test.ts holds the tree to the same limits, so `npm test` fails on a regression too.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const AGENT = join(ROOT, 'agent');

export const LIMITS = { backImports: 3, fileLines: 500, functionLines: 120 } as const;

function listTs(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...listTs(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out.sort();
}

/** Folder depth of a part: 1 = a feature (agent/workloads with its subfolders), 2 = every subfolder alone. */
let depth = 2;

export function partOf(file: string): string {
  const rel = relative(AGENT, file);
  if (!rel.includes('/')) return rel;
  return dirname(rel).split('/').slice(0, depth).join('/');
}

interface FileImport {
  from: string;
  to: string;
  typeOnly: boolean;
}

function importsOf(file: string, source: ts.SourceFile): FileImport[] {
  const out: FileImport[] = [];
  for (const stmt of source.statements) {
    let spec: ts.Expression | undefined;
    let typeOnly = false;
    if (ts.isImportDeclaration(stmt)) {
      spec = stmt.moduleSpecifier;
      typeOnly = stmt.importClause?.isTypeOnly ?? false;
    } else if (ts.isExportDeclaration(stmt) && stmt.moduleSpecifier) {
      spec = stmt.moduleSpecifier;
      typeOnly = stmt.isTypeOnly;
    }
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue;
    const target = resolve(dirname(file), spec.text.replace(/\.js$/, '.ts'));
    if (target.startsWith(AGENT + '/')) out.push({ from: file, to: target, typeOnly });
  }
  return out;
}

export interface FunctionSpan {
  file: string;
  name: string;
  line: number;
  lines: number;
}

function functionsOf(file: string, source: ts.SourceFile): FunctionSpan[] {
  const out: FunctionSpan[] = [];
  const visit = (node: ts.Node, name: string | undefined) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const own = node.name && ts.isIdentifier(node.name) ? node.name.text : undefined;
      out.push({ file, name: own ?? name ?? '(anonymous)', line: start + 1, lines: end - start + 1 });
    }
    const childName =
      (ts.isVariableDeclaration(node) || ts.isPropertyAssignment(node) || ts.isPropertyDeclaration(node)) &&
      ts.isIdentifier(node.name)
        ? node.name.text
        : name;
    ts.forEachChild(node, (child) => visit(child, childName));
  };
  visit(source, undefined);
  return out;
}

/** Strongly connected components (Tarjan), each sorted; singletons only when they import themselves. */
export function cycles(nodes: string[], edges: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const connect = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || edges.get(v)?.has(v)) out.push(scc.sort());
    }
  };
  for (const n of nodes) if (!idx.has(n)) connect(n);
  return out;
}

/**
 * An order of the parts, lowest first, with few imports running back up (weighted by how many file imports
 * each part-to-part edge carries): greedy (Eades et al.) followed by moving single parts while that helps.
 */
export function orderParts(parts: string[], weight: Map<string, Map<string, number>>): string[] {
  const w = (a: string, b: string) => weight.get(a)?.get(b) ?? 0;
  const rest = new Set(parts);
  const low: string[] = [];
  const high: string[] = [];
  while (rest.size > 0) {
    // A part that imports nothing left goes to the bottom; one nothing left imports goes to the top.
    const sink = [...rest].find((p) => [...rest].every((q) => q === p || w(p, q) === 0));
    if (sink) {
      low.push(sink);
      rest.delete(sink);
      continue;
    }
    const source = [...rest].find((p) => [...rest].every((q) => q === p || w(q, p) === 0));
    if (source) {
      high.unshift(source);
      rest.delete(source);
      continue;
    }
    let best = '';
    let score = Number.NEGATIVE_INFINITY;
    for (const p of rest) {
      let s = 0;
      for (const q of rest) s += w(q, p) - w(p, q);
      if (s > score) [best, score] = [p, s];
    }
    // Imported by more than it imports: lower.
    low.push(best);
    rest.delete(best);
  }
  const order = [...low, ...high];
  const cost = (o: string[]) => {
    let c = 0;
    for (let i = 0; i < o.length; i++) for (let j = i + 1; j < o.length; j++) c += w(o[i]!, o[j]!);
    return c;
  };
  let current = cost(order);
  for (let improved = true; improved; ) {
    improved = false;
    for (let i = 0; i < order.length; i++) {
      for (let j = 0; j < order.length; j++) {
        if (i === j) continue;
        const next = [...order];
        const [p] = next.splice(i, 1);
        next.splice(j, 0, p!);
        const c = cost(next);
        if (c < current) {
          order.splice(0, order.length, ...next);
          current = c;
          improved = true;
        }
      }
    }
  }
  return order;
}

export interface LayerReport {
  parts: { part: string; layer: number }[];
  backImports: FileImport[];
  fileCycles: string[][];
  longFiles: { file: string; lines: number }[];
  longFunctions: FunctionSpan[];
}

const GENERATED = /\/(generated|.*-table)\.ts$|\.generated\.ts$/;

export function analyse(): LayerReport {
  const files = listTs(AGENT);
  const imports: FileImport[] = [];
  const functions: FunctionSpan[] = [];
  const longFiles: { file: string; lines: number }[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    imports.push(...importsOf(file, source));
    functions.push(...functionsOf(file, source));
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > LIMITS.fileLines && !GENERATED.test(file)) longFiles.push({ file, lines });
  }
  const parts = [...new Set(files.map(partOf))].sort();
  const weight = new Map<string, Map<string, number>>();
  for (const i of imports) {
    const [a, b] = [partOf(i.from), partOf(i.to)];
    if (a === b) continue;
    const m = weight.get(a) ?? new Map<string, number>();
    m.set(b, (m.get(b) ?? 0) + 1);
    weight.set(a, m);
  }
  const order = orderParts(parts, weight);
  const position = new Map(order.map((p, i) => [p, i]));
  const backImports = imports.filter((i) => {
    const [a, b] = [partOf(i.from), partOf(i.to)];
    return a !== b && position.get(b)! > position.get(a)!;
  });
  // Layer: one above the highest part it imports (back-up imports left out).
  const layer = new Map<string, number>();
  for (const p of order) {
    let l = 0;
    for (const [q, n] of weight.get(p) ?? [])
      if (n > 0 && position.get(q)! < position.get(p)!) l = Math.max(l, layer.get(q)! + 1);
    layer.set(p, l);
  }
  const edges = new Map<string, Set<string>>();
  for (const i of imports) {
    const s = edges.get(i.from) ?? new Set<string>();
    s.add(i.to);
    edges.set(i.from, s);
  }
  return {
    parts: order.map((part) => ({ part, layer: layer.get(part)! })),
    backImports,
    fileCycles: cycles(files, edges),
    longFiles,
    longFunctions: functions.filter((f) => f.lines > LIMITS.functionLines).sort((a, b) => b.lines - a.lines),
  };
}

function main(argv: string[]): number {
  // --features: a feature folder and its subfolders are one part (imports inside a feature are its own affair).
  if (argv.includes('--features')) depth = 1;
  const report = analyse();
  const rel = (f: string) => relative(ROOT, f);
  const layers = Math.max(...report.parts.map((p) => p.layer)) + 1;
  console.log(`${report.parts.length} parts on ${layers} layers (lowest first):`);
  for (let l = 0; l < layers; l++) {
    const names = report.parts.filter((p) => p.layer === l).map((p) => p.part);
    console.log(`  ${String(l).padStart(2)}  ${names.join('  ')}`);
  }
  console.log(`imports running back up: ${report.backImports.length} (limit ${LIMITS.backImports})`);
  for (const i of report.backImports)
    console.log(`  ${rel(i.from)} -> ${rel(i.to)}${i.typeOnly ? ' (type)' : ''}`);
  console.log(`import cycles between files: ${report.fileCycles.length}`);
  for (const c of report.fileCycles) console.log(`  ${c.map(rel).join(' <-> ')}`);
  console.log(`files over ${LIMITS.fileLines} lines: ${report.longFiles.length}`);
  for (const f of report.longFiles) console.log(`  ${rel(f.file)} ${f.lines}`);
  console.log(`functions over ${LIMITS.functionLines} lines: ${report.longFunctions.length}`);
  for (const f of report.longFunctions) console.log(`  ${rel(f.file)}:${f.line} ${f.name} ${f.lines}`);
  if (argv.includes('--cycles')) return report.fileCycles.length > 0 ? 1 : 0;
  if (!argv.includes('--check')) return 0;
  const failed =
    report.fileCycles.length > 0 ||
    report.backImports.length > LIMITS.backImports ||
    report.longFiles.length > 0 ||
    report.longFunctions.length > 0;
  return failed ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
