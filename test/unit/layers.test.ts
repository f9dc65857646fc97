// The shape of agent/ as scripts/check-layers.ts draws it from the imports, held to its limits so that a change
// that makes two parts lean on each other, or grows a function past ~120 lines, fails here and not in review.
import { relative } from 'node:path';
import test from 'ava';
import { analyse, cycles, LIMITS, orderParts } from '../../scripts/check-layers.js';

const report = analyse();
const rel = (f: string) => relative(process.cwd(), f);

test('agent/: no two files import each other, directly or round a circle', (t) => {
  t.deepEqual(
    report.fileCycles.map((c) => c.map(rel)),
    [],
  );
});

test(`agent/: at most ${LIMITS.backImports} imports run back up the layers (every subfolder its own part)`, (t) => {
  const back = report.backImports.map((i) => `${rel(i.from)} -> ${rel(i.to)}`);
  t.true(back.length <= LIMITS.backImports, back.join('\n'));
});

test(`agent/: no function over ${LIMITS.functionLines} lines, no hand-written file over ${LIMITS.fileLines}`, (t) => {
  t.deepEqual(
    report.longFunctions.map((f) => `${rel(f.file)}:${f.line} ${f.name} ${f.lines}`),
    [],
  );
  t.deepEqual(
    report.longFiles.map((f) => `${rel(f.file)} ${f.lines}`),
    [],
  );
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
