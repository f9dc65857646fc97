import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { OP_PARAMETER_NAMES, OP_TYPE_NAMES } from '../../models/inspect/op-coverage.generated.js';
import { parseOpParameterUnion, parseOpTypeEnum } from '../../scripts/gen-op-coverage.js';

test('OpType enum parsing follows flatc numbering: implicit increments, explicit values, comments', (t) => {
  const fbs = `
    enum Other : int { X }
    enum OpType : int {
      AbsVal,
      QuantizedAdd, // a comment, with a comma
      /* block */ ArgMax,
      Raster = 128,
      ConvertTensor,
      Plugin = 256
    }`;
  t.deepEqual(
    [...parseOpTypeEnum(fbs)],
    [
      [0, 'AbsVal'],
      [1, 'QuantizedAdd'],
      [2, 'ArgMax'],
      [128, 'Raster'],
      [129, 'ConvertTensor'],
      [256, 'Plugin'],
    ],
  );
  t.throws(() => parseOpTypeEnum('enum Nope : int { A }'), { message: 'enum OpType not found' });
});

test('OpParameter union parsing keeps declaration order', (t) => {
  t.deepEqual(parseOpParameterUnion('union OpParameter {\n  QuantizedAdd,\n  ArgMax,\n  Blob\n}'), [
    'QuantizedAdd',
    'ArgMax',
    'Blob',
  ]);
});

const fbsPath = join(process.env['MNN_SOURCE_DIR'] ?? '/opt/src/MNN', 'schema', 'default', 'MNN.fbs');
test('the generated table matches the MNN schema it was generated from, when that checkout is here', (t) => {
  if (!existsSync(fbsPath)) {
    t.log(`${fbsPath} not present; checked only the committed table's shape`);
    t.is(OP_TYPE_NAMES.get(0), 'AbsVal');
    return;
  }
  const fbs = readFileSync(fbsPath, 'utf8');
  t.deepEqual([...parseOpTypeEnum(fbs)], [...OP_TYPE_NAMES]);
  t.deepEqual(parseOpParameterUnion(fbs), OP_PARAMETER_NAMES);
});
