// `tsx scripts/check-layers.ts [--check] [--features]`: the shape of the repository drawn from its imports. Every
// top-level folder with code is read (agent/, lib/, engine/ with its tools, models/, ota/, dashboard/, scripts/,
// bench/, ...); test/ is the tool over it and stays out (TOOLS). A part is a folder up to three levels deep
// (agent/workloads/voice, ota/trust, engine/src/host); a file directly in a top-level folder is a part of its own
// (agent/compose.ts, ota/module.ts: a feature's root). With --features each top-level folder is one part.
// Parts are ordered so that each sits above what it imports; an import that has to run back up that order is a
// place where two parts lean on each other. Prints the parts, their layers, the imports running back up,
// file-level import cycles, the files and functions over the length limits and those in the warning band below
// them. With --cycles it exits 1 when files import each other in a circle; with --check (npm run check:layers,
// check:generated) also when a figure passes its limit (LIMITS): more than 3 imports running back up, a
// hand-written file over 500 lines, a function over 120, or a file of agent/ other than compose.ts that imports a
// feature (FEATURES: ota/) and is not named in FEATURE_IMPORT_EXEMPT with its reason. The lengths are measured
// over the TypeScript and the C++ (engine/native, and the C++ of bench/ and engine/tools; function bodies by
// scripts/cxx-functions.ts). A file over 400 lines or a function over 90 (BAND) is in the warning band: listed,
// never failed, so that a file is split where its parts are while there is room, not shaved to stay under the
// limit when it gets there. Generated files and migrations are exempt from the lengths by the list EXEMPT,
// nothing by its location.
// test/unit/layers.test.ts holds the tree to the same limits and compares the table with docs/ARCHITECTURE.md.
// --scope agent,lib reads only those top-level folders (default: all but TOOLS). --write-docs puts the figures and
// the table into docs/ARCHITECTURE.md between its markers. --walk a,b,c prints how many parts a path through those files visits and how often it returns to one it left.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { cxxFunctions } from './cxx-functions.js';
import { cycles, orderParts } from './part-order.js';

// The graph algorithms the check runs, for layers.test.ts to test on small graphs.
export { cycles, orderParts } from './part-order.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const LIMITS = { backImports: 3, fileLines: 500, functionLines: 120 } as const;
/** Lengths over these (and not over LIMITS) are the warning band: reported, not failed. */
export const BAND = { fileLines: 400, functionLines: 90 } as const;

/** Top-level folders left out of the check: the tests, a tool over the product that may import any part (a test
 *  reaches into what it tests). The benchmarks are read and held to the limits like the rest. Only at the top:
 *  engine/tools is read. */
export const TOOLS = ['test'] as const;
/** Never code of ours, wherever it sits. */
const SKIP = new Set(['node_modules', 'dist', '.git', '.ci', 'docs', 'yocto', 'build']);

/**
 * Files exempt from the length limits (file and function), each named: generated tables, and schema migrations
 * (append-only: a version applied on devices is never edited or split). Named here, never by where they sit;
 * layers.test.ts fails on a name that no longer exists.
 */
export const EXEMPT = [
  'models/inspect/op-coverage.generated.ts',
  'agent/store/core-migration.ts',
  'agent/http/migration.ts',
  'agent/telemetry/migrations.ts',
  'agent/runtime/migrations.ts',
  'agent/workloads/voice/migration.ts',
  'models/store/migration.ts',
  'ota/migrations.ts',
] as const;

/**
 * Features beside the agent, composed into it in one place: of agent/'s files only the composition root imports
 * them, and those named in FEATURE_IMPORT_EXEMPT, each with why. models/ and engine/ are libraries the agent
 * builds on (as lib/ is) and not in this list.
 */
export const FEATURES = ['ota'] as const;
export const COMPOSITION_ROOT = 'agent/compose.ts';
/** Files (or folders, ending in /) of agent/ that import a feature themselves, each with the reason. */
export const FEATURE_IMPORT_EXEMPT: Readonly<Record<string, string>> = {
  'agent/cli/commands/':
    "OTA's operator tools (keygen, sign, pack, publish, rollout, serve, root rotation) and `models pull`/`hub`: the CLI bodies issue 30 moved out of ota/; a command runs without the agent's modules, so it wires its own",
  'agent/config/schema.ts':
    "the configuration file's schema names every section, OTA's own (ota/config.ts) among them; a configuration is read before anything is composed",
  'agent/store/migrations.ts':
    "the agent database's migrations, every feature's in the order devices applied them (OTA's 040-043 among them); every command opens the file, before anything is composed",
};

/**
 * The dashboard's browser code (dashboard/src/) imports from outside itself only these files, its wire contract:
 * the shapes the agent's API promises, declared in one place, so that no page reaches into the daemon's
 * internals (the runtime's rooms, settings) and a change there reaches the browser only through the contract.
 */
export const DASHBOARD_CONTRACT = ['agent/dashboard-api/wire.ts'] as const;
const DASHBOARD_SRC = 'dashboard/src/';

/** Imports from dashboard/src/ of anything outside it but DASHBOARD_CONTRACT. */
export function dashboardImportsOf<I extends { from: string; to: string }>(imports: readonly I[]): I[] {
  return imports.filter((i) => {
    const [from, to] = [relative(ROOT, i.from), relative(ROOT, i.to)];
    if (!from.startsWith(DASHBOARD_SRC) || to.startsWith(DASHBOARD_SRC)) return false;
    return !(DASHBOARD_CONTRACT as readonly string[]).includes(to);
  });
}

const CODE = /\.(ts|mts|mjs)$/;
/** C++ sources and headers: measured (lengths), not part of the import graph. */
const CXX = /\.(cc|cpp|h|hpp)$/;

function listCode(dir: string, pattern = CODE): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    // build-<triple>/ are the cross-builds' trees (engine/build-aarch64-linux-gnu): outputs, like build/.
    if (SKIP.has(name) || name.startsWith('build-') || name.startsWith('tmp_')) continue;
    if (dir === ROOT && (TOOLS as readonly string[]).includes(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...listCode(path, pattern));
    else if (pattern.test(name) && !name.endsWith('.d.ts') && dir !== ROOT) out.push(path);
  }
  return out.sort();
}

/** Folder depth of a part: 1 = each top-level folder is one part, 3 = every subfolder (down to three levels). */
let depth = 3;

export function partOf(file: string): string {
  const rel = relative(ROOT, file);
  const dirs = dirname(rel).split('/');
  if (depth > 1 && dirs.length === 1) return rel;
  return dirs.slice(0, depth).join('/');
}

interface FileImport {
  from: string;
  to: string;
  typeOnly: boolean;
}

function resolveSpec(file: string, spec: string, known: Set<string>): string | undefined {
  const base = resolve(dirname(file), spec);
  for (const candidate of [base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), base, `${base}.ts`])
    if (known.has(candidate)) return candidate;
  return undefined;
}

function importsOf(file: string, source: ts.SourceFile, known: Set<string>): FileImport[] {
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
    const target = resolveSpec(file, spec.text, known);
    if (target) out.push({ from: file, to: target, typeOnly });
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

export interface LayerReport {
  parts: { part: string; layer: number }[];
  backImports: FileImport[];
  /** Imports of a feature (FEATURES) from agent/ outside the composition root, not exempt. */
  featureImports: FileImport[];
  /** The exempt ones (FEATURE_IMPORT_EXEMPT), by the entry that allows them. */
  exemptFeatureImports: Map<string, FileImport[]>;
  /** Imports of the dashboard's browser code past its wire contract (DASHBOARD_CONTRACT). */
  dashboardImports: FileImport[];
  fileCycles: string[][];
  longFiles: { file: string; lines: number }[];
  longFunctions: FunctionSpan[];
  /** Over BAND and not over LIMITS, longest first: the warning band. */
  bandFiles: { file: string; lines: number }[];
  bandFunctions: FunctionSpan[];
  /** The C++ files measured with the TypeScript. */
  cxxFiles: string[];
}

export function analyse(options: { features?: boolean; scope?: readonly string[] } = {}): LayerReport {
  depth = options.features ? 1 : 3;
  const scope = options.scope;
  const inScope = (f: string) => !scope || scope.includes(relative(ROOT, f).split('/')[0]!);
  const files = listCode(ROOT).filter(inScope);
  const cxxFiles = listCode(ROOT, CXX).filter(inScope);
  const known = new Set(files);
  const exempt = new Set(EXEMPT.map((f) => join(ROOT, f)));
  const imports: FileImport[] = [];
  const functions: FunctionSpan[] = [];
  const fileLengths: { file: string; lines: number }[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    imports.push(...importsOf(file, source, known));
    if (exempt.has(file)) continue;
    functions.push(...functionsOf(file, source));
    fileLengths.push({ file, lines: lineCount(text) });
  }
  for (const file of cxxFiles) {
    if (exempt.has(file)) continue;
    const text = readFileSync(file, 'utf8');
    functions.push(...cxxFunctions(text).map((f) => ({ file, ...f })));
    fileLengths.push({ file, lines: lineCount(text) });
  }
  const longest = <T extends { lines: number }>(list: T[]) => list.sort((a, b) => b.lines - a.lines);
  const over = (n: number, limit: number, band: number) => (n > limit ? 'limit' : n > band ? 'band' : 'fine');
  const fileOver = (f: { lines: number }) => over(f.lines, LIMITS.fileLines, BAND.fileLines);
  const functionOver = (f: { lines: number }) => over(f.lines, LIMITS.functionLines, BAND.functionLines);
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
  const { featureImports, exemptFeatureImports } = featureImportsOf(imports);
  return {
    parts: order.map((part) => ({ part, layer: layer.get(part)! })),
    backImports,
    featureImports,
    exemptFeatureImports,
    dashboardImports: dashboardImportsOf(imports),
    fileCycles: cycles(files, edges),
    longFiles: longest(fileLengths.filter((f) => fileOver(f) === 'limit')),
    longFunctions: longest(functions.filter((f) => functionOver(f) === 'limit')),
    bandFiles: longest(fileLengths.filter((f) => fileOver(f) === 'band')),
    bandFunctions: longest(functions.filter((f) => functionOver(f) === 'band')),
    cxxFiles,
  };
}

/** Lines of a file as an editor numbers them (a final newline ends the last line, it does not start one). */
function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** agent/'s imports of a feature, but the composition root's: the exempt ones by their entry, and the rest. */
function featureImportsOf(imports: FileImport[]) {
  const featureImports: FileImport[] = [];
  const exemptFeatureImports = new Map<string, FileImport[]>();
  for (const i of imports) {
    const [from, to] = [relative(ROOT, i.from), relative(ROOT, i.to)];
    if (!from.startsWith('agent/') || from === COMPOSITION_ROOT) continue;
    if (!(FEATURES as readonly string[]).includes(to.split('/')[0]!)) continue;
    const entry = Object.keys(FEATURE_IMPORT_EXEMPT).find((e) =>
      e.endsWith('/') ? from.startsWith(e) : from === e,
    );
    if (entry) exemptFeatureImports.set(entry, [...(exemptFeatureImports.get(entry) ?? []), i]);
    else featureImports.push(i);
  }
  return { featureImports, exemptFeatureImports };
}

/** The parts by layer, lowest first: the lines docs/ARCHITECTURE.md shows (layers.test.ts compares the two). */
export function layerTable(report: LayerReport): string[] {
  const layers = Math.max(...report.parts.map((p) => p.layer)) + 1;
  const out: string[] = [];
  for (let l = 0; l < layers; l++) {
    const names = report.parts.filter((p) => p.layer === l).map((p) => p.part);
    out.push(`${String(l).padStart(2)}  ${names.join('  ')}`);
  }
  return out;
}

export const DOCS = join(ROOT, 'docs', 'ARCHITECTURE.md');
const BEGIN = '<!-- check-layers:begin (npx tsx scripts/check-layers.ts --write-docs) -->';
const END = '<!-- check-layers:end -->';

/** The section of docs/ARCHITECTURE.md the check writes: its figures and its table, as a list item's block. */
export function docsSection(report: LayerReport): string[] {
  const table = layerTable(report);
  return [
    BEGIN,
    `  ${report.parts.length} parts on ${table.length} layers, lowest first; ${report.backImports.length} imports running back up, ${report.fileCycles.length} import cycles:`,
    '  ```',
    ...table.map((line) => `  ${line}`),
    '  ```',
    END,
  ];
}

/** The lines between (and with) the markers as docs/ARCHITECTURE.md has them now; [] when it has none. */
export function docsSectionInFile(text = readFileSync(DOCS, 'utf8')): string[] {
  const lines = text.split('\n');
  const from = lines.indexOf(BEGIN);
  const to = lines.indexOf(END);
  return from >= 0 && to > from ? lines.slice(from, to + 1) : [];
}

function writeDocs(report: LayerReport): void {
  const text = readFileSync(DOCS, 'utf8');
  const lines = text.split('\n');
  const from = lines.indexOf(BEGIN);
  const to = lines.indexOf(END);
  if (from < 0 || to < from) throw new Error(`${DOCS} has no ${BEGIN} … ${END} section to write`);
  lines.splice(from, to - from + 1, ...docsSection(report));
  writeFileSync(DOCS, lines.join('\n'));
}

/** A path through files (a job's walk): the parts it visits, and how often it comes back to a part it had left. */
export function walk(files: string[]): { parts: string[]; visited: number; returns: number } {
  const parts: string[] = [];
  for (const f of files) {
    const part = partOf(resolve(ROOT, f));
    if (parts.at(-1) !== part) parts.push(part);
  }
  const visited = new Set(parts).size;
  return { parts, visited, returns: parts.length - visited };
}

function main(argv: string[]): number {
  // --features: a top-level folder and its subfolders are one part (imports inside a feature are its own affair).
  const at = argv.indexOf('--scope');
  const scope = at >= 0 ? (argv[at + 1] ?? '').split(',') : undefined;
  const report = analyse({ features: argv.includes('--features'), ...(scope ? { scope } : {}) });
  const rel = (f: string) => relative(ROOT, f);
  const table = layerTable(report);
  console.log(`${report.parts.length} parts on ${table.length} layers (lowest first):`);
  for (const line of table) console.log(`  ${line}`);
  console.log(`imports running back up: ${report.backImports.length} (limit ${LIMITS.backImports})`);
  for (const i of report.backImports)
    console.log(`  ${rel(i.from)} -> ${rel(i.to)}${i.typeOnly ? ' (type)' : ''}`);
  console.log(
    `imports of ${FEATURES.join(', ')}/ from agent/ outside ${COMPOSITION_ROOT}: ${report.featureImports.length} ` +
      `(exempt by FEATURE_IMPORT_EXEMPT: ${[...report.exemptFeatureImports].map(([e, l]) => `${e} ${l.length}`).join(', ') || 'none'})`,
  );
  for (const i of report.featureImports) console.log(`  ${rel(i.from)} -> ${rel(i.to)}`);
  console.log(
    `imports of ${DASHBOARD_SRC} past its wire contract (${DASHBOARD_CONTRACT.join(', ')}): ${report.dashboardImports.length}`,
  );
  for (const i of report.dashboardImports) console.log(`  ${rel(i.from)} -> ${rel(i.to)}`);
  console.log(`import cycles between files: ${report.fileCycles.length}`);
  for (const c of report.fileCycles) console.log(`  ${c.map(rel).join(' <-> ')}`);
  console.log(`files over ${LIMITS.fileLines} lines: ${report.longFiles.length}`);
  for (const f of report.longFiles) console.log(`  ${rel(f.file)} ${f.lines}`);
  console.log(`functions over ${LIMITS.functionLines} lines: ${report.longFunctions.length}`);
  for (const f of report.longFunctions) console.log(`  ${rel(f.file)}:${f.line} ${f.name} ${f.lines}`);
  const isCxx = (f: { file: string }) => CXX.test(f.file);
  console.log(
    `warning band (over ${BAND.fileLines} lines a file, ${BAND.functionLines} a function, up to the limits; ` +
      `${report.cxxFiles.length} C++ files measured): ${report.bandFiles.length} files ` +
      `(${report.bandFiles.filter(isCxx).length} C++), ${report.bandFunctions.length} functions ` +
      `(${report.bandFunctions.filter(isCxx).length} C++)`,
  );
  for (const f of report.bandFiles) console.log(`  ${rel(f.file)} ${f.lines}`);
  for (const f of report.bandFunctions) console.log(`  ${rel(f.file)}:${f.line} ${f.name} ${f.lines}`);
  const along = argv.indexOf('--walk');
  if (along >= 0) {
    const w = walk((argv[along + 1] ?? '').split(',').filter(Boolean));
    console.log(
      `walk: ${w.parts.length} steps, ${w.visited} parts visited, ${w.returns} returns to a part left`,
    );
    console.log(`  ${w.parts.join(' > ')}`);
  }
  if (argv.includes('--write-docs')) {
    if (scope || argv.includes('--features'))
      throw new Error('--write-docs writes the whole-repository table');
    writeDocs(report);
    console.log(`wrote the table into ${relative(ROOT, DOCS)}`);
  }
  if (argv.includes('--cycles')) return report.fileCycles.length > 0 ? 1 : 0;
  if (!argv.includes('--check')) return 0;
  // The whole-repository table is also the one in docs/ARCHITECTURE.md (check:generated keeps the two equal).
  const docsStale =
    !scope &&
    !argv.includes('--features') &&
    docsSection(report).join('\n') !== docsSectionInFile().join('\n');
  if (docsStale)
    console.log(
      `${relative(ROOT, DOCS)}: the table differs; run npx tsx scripts/check-layers.ts --write-docs`,
    );
  const failed =
    docsStale ||
    report.fileCycles.length > 0 ||
    report.backImports.length > LIMITS.backImports ||
    report.featureImports.length > 0 ||
    report.dashboardImports.length > 0 ||
    report.longFiles.length > 0 ||
    report.longFunctions.length > 0;
  return failed ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
