// The shape of the code as scripts/check-layers.ts draws it from the imports, held to its limits so that a change
// that makes two parts lean on each other, or grows a function past ~120 lines, fails here and not in review.
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import test from 'ava';
import {
  analyse,
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

test(`no function over ${LIMITS.functionLines} lines, no hand-written file over ${LIMITS.fileLines}`, (t) => {
  t.deepEqual(
    report.longFunctions.map((f) => `${rel(f.file)}:${f.line} ${f.name} ${f.lines}`),
    [],
  );
  t.deepEqual(
    report.longFiles.map((f) => `${rel(f.file)} ${f.lines}`),
    [],
  );
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
