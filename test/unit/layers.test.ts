// The shape of the code as scripts/check-layers.ts draws it from the imports, held to its limits so that a change
// that makes two parts lean on each other, or grows a function past ~120 lines (TypeScript or C++), fails here and
// not in review; what sits in the warning band below the limits is listed, not failed.
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import test from 'ava';
import {
  analyse,
  BAND,
  COMPOSITION_ROOT,
  cycles,
  DASHBOARD_CONTRACT,
  dashboardImportsOf,
  docsSection,
  docsSectionInFile,
  EXEMPT,
  FEATURE_IMPORT_EXEMPT,
  FEATURES,
  LIMITS,
  orderParts,
} from '../../scripts/check-layers.js';
import { blankCxx, cxxFunctions } from '../../scripts/cxx-functions.js';

// The whole repository but the tests over it (test/): every top-level folder with code, bench/ and scripts/ too.
const report = analyse();
const rel = (f: string) => relative(process.cwd(), f);

test('no two files import each other, directly or round a circle', (t) => {
  t.deepEqual(
    report.fileCycles.map((c) => c.map(rel)),
    [],
  );
});

test(`at most ${LIMITS.backImports} imports run back up the layers (every subfolder its own part)`, (t) => {
  const back = report.backImports.map((i) => `${rel(i.from)} -> ${rel(i.to)}`);
  t.true(back.length <= LIMITS.backImports, back.join('\n'));
});

test(`no function over ${LIMITS.functionLines} lines, no hand-written file over ${LIMITS.fileLines} (TypeScript and C++)`, (t) => {
  t.deepEqual(
    report.longFunctions.map((f) => `${rel(f.file)}:${f.line} ${f.name} ${f.lines}`),
    [],
  );
  t.deepEqual(
    report.longFiles.map((f) => `${rel(f.file)} ${f.lines}`),
    [],
  );
});

test(`the warning band: over ${BAND.fileLines} lines a file or ${BAND.functionLines} a function, not over the limits; listed, not failed`, (t) => {
  for (const f of report.bandFiles)
    t.true(f.lines > BAND.fileLines && f.lines <= LIMITS.fileLines, rel(f.file));
  for (const f of report.bandFunctions)
    t.true(f.lines > BAND.functionLines && f.lines <= LIMITS.functionLines, `${rel(f.file)} ${f.name}`);
  // Longest first, as the report prints them.
  t.deepEqual(
    report.bandFunctions.map((f) => f.lines),
    report.bandFunctions.map((f) => f.lines).sort((a, b) => b - a),
  );
  t.log(`${report.bandFiles.length} files, ${report.bandFunctions.length} functions in the band`);
  for (const f of report.bandFiles) t.log(`${rel(f.file)} ${f.lines}`);
  for (const f of report.bandFunctions) t.log(`${rel(f.file)}:${f.line} ${f.name} ${f.lines}`);
});

test('the C++ is measured with the TypeScript: every file of engine/native, and the C++ of bench/ and engine/tools', (t) => {
  const cxx = report.cxxFiles.map(rel);
  for (const name of readdirSync('engine/native').filter((n) => /\.(cc|h)$/.test(n)))
    t.true(cxx.includes(`engine/native/${name}`), name);
  t.true(cxx.includes('bench/native/mnn-generate.cpp'));
  t.true(cxx.includes('engine/tools/tiny-talker/gen_tiny_talker.cpp'));
});

test('cxxFunctions: function bodies by matched braces, at file, namespace and class level', (t) => {
  const code = [
    '#include "a.h"', //                                       1
    '#define BLOCK(x) { x; }', //                              2
    'namespace mnn_edge {', //                                 3
    'namespace {', //                                          4
    'const char* kBrace = "{ not a block";', //                5
    "char c = '{';", //                                        6
    'std::vector<int> kTable = {1, 2};', //                    7
    'int Twice(int v) {  // a comment with {', //              8
    '  /* and } here */', //                                   9
    '  return v * 2;', //                                      10
    '}', //                                                    11
    '}  // namespace', //                                      12
    'class Handle : public Base {', //                         13
    ' public:', //                                             14
    '  Handle(int a) : a_(a), b_{a} {}', //                    15
    '  int Get() const override { return a_; }', //            16
    ' private:', //                                            17
    '  struct State {', //                                     18
    '    int x{0};', //                                        19
    '  };', //                                                 20
    '  int a_;', //                                            21
    '  int b_{1};', //                                         22
    '};', //                                                   23
    'enum class Mode { kA, kB };', //                          24
    'template <typename T>', //                                25
    'T Handle::Run(std::function<void()> f = [] {}) {', //     26
    '  auto g = [&]() { struct Local { void m() {} }; };', //  27
    '  if (x) {', //                                           28
    '  }', //                                                  29
    '  return T{};', //                                        30
    '}', //                                                    31
    'bool operator==(const A& a, const A& b) { return true; }', // 32
    'auto Make() -> std::unique_ptr<A> {', //                  33
    '  return nullptr;', //                                    34
    '}', //                                                    35
    '}  // namespace mnn_edge', //                             36
  ].join('\n');
  t.deepEqual(
    cxxFunctions(code).map((f) => `${f.line} ${f.name} ${f.lines}`),
    ['8 Twice 4', '15 Handle 1', '16 Get 1', '25 Handle::Run 7', '32 operator== 1', '33 Make 3'],
  );
  // Blanking keeps every line where it was.
  t.is(blankCxx(code).split('\n').length, code.split('\n').length);
});

test(`of agent/, only ${COMPOSITION_ROOT} imports a feature (${FEATURES.join(', ')}/), or a file named with its reason`, (t) => {
  t.deepEqual(
    report.featureImports.map((i) => `${rel(i.from)} -> ${rel(i.to)}`),
    [],
  );
  // An exemption nothing uses any more goes from the list.
  const unused = Object.keys(FEATURE_IMPORT_EXEMPT).filter((e) => !report.exemptFeatureImports.has(e));
  t.deepEqual(unused, []);
  for (const [entry, why] of Object.entries(FEATURE_IMPORT_EXEMPT))
    t.true(why.length > 40, `${entry}: say why`);
});

test(`the dashboard's browser code imports from outside dashboard/src only its wire contract (${DASHBOARD_CONTRACT.join(', ')})`, (t) => {
  t.deepEqual(
    report.dashboardImports.map((i) => `${rel(i.from)} -> ${rel(i.to)}`),
    [],
  );
  // The rule itself: a page reaching into the runtime is caught; the contract and the dashboard's own files are
  // not; code outside dashboard/src is not its business.
  const at = (f: string) => join(process.cwd(), f);
  const imports = [
    { from: at('dashboard/src/pages/models.ts'), to: at('agent/runtime/engine/load-split.ts') },
    { from: at('dashboard/src/ui/slot-choice.ts'), to: at('lib/log-tail.ts') },
    { from: at('dashboard/src/pages/models.ts'), to: at(DASHBOARD_CONTRACT[0]) },
    { from: at('dashboard/src/pages/models.ts'), to: at('dashboard/src/ui/dom.ts') },
    { from: at('agent/dashboard-api/wire.ts'), to: at('agent/runtime/engine/load-split.ts') },
  ];
  t.deepEqual(
    dashboardImportsOf(imports).map((i) => `${rel(i.from)} -> ${rel(i.to)}`),
    [
      'dashboard/src/pages/models.ts -> agent/runtime/engine/load-split.ts',
      'dashboard/src/ui/slot-choice.ts -> lib/log-tail.ts',
    ],
  );
});

test('docs/ARCHITECTURE.md shows the table the check draws (npx tsx scripts/check-layers.ts --write-docs)', (t) => {
  const inDocs = docsSectionInFile();
  t.true(inDocs.length > 0, 'docs/ARCHITECTURE.md has no check-layers section');
  t.deepEqual(inDocs, docsSection(report));
});

test('every top-level folder with code is read, engine/tools with the engine', (t) => {
  const tops = new Set(report.parts.map((p) => p.part.split('/')[0]));
  for (const top of [
    'agent',
    'bench',
    'board-support',
    'dashboard',
    'engine',
    'lib',
    'models',
    'ota',
    'scripts',
  ])
    t.true(tops.has(top), top);
  t.true(
    report.parts.some((p) => p.part.startsWith('engine/tools/')),
    'engine/tools is part of the check',
  );
});

test('the files exempt from the length limits are named, and each still exists', (t) => {
  const missing = EXEMPT.filter((f) => !existsSync(f));
  t.deepEqual(missing, []);
});

test('cycles: a circle of files is one component; a chain is none', (t) => {
  const edges = new Map([
    ['a', new Set(['b'])],
    ['b', new Set(['c'])],
    ['c', new Set(['a'])],
    ['d', new Set(['a'])],
  ]);
  t.deepEqual(cycles(['a', 'b', 'c', 'd'], edges), [['a', 'b', 'c']]);
  t.deepEqual(cycles(['x', 'y'], new Map([['x', new Set(['y'])]])), []);
});

test('orderParts: what is imported sits below what imports it; a two-way pair costs its lighter side', (t) => {
  const w = (pairs: [string, string, number][]) => {
    const m = new Map<string, Map<string, number>>();
    for (const [a, b, n] of pairs) m.set(a, (m.get(a) ?? new Map()).set(b, n));
    return m;
  };
  t.deepEqual(
    orderParts(
      ['top', 'mid', 'low'],
      w([
        ['top', 'mid', 1],
        ['mid', 'low', 1],
      ]),
    ),
    ['low', 'mid', 'top'],
  );
  const order = orderParts(
    ['a', 'b'],
    w([
      ['a', 'b', 5],
      ['b', 'a', 1],
    ]),
  );
  t.deepEqual(order, ['b', 'a']);
});
