import { readFileSync } from 'node:fs';
import { MnnEdgeError } from '../../lib/errors.js';
import { FlatBufferFormatError, FlatBufferReader } from './flatbuffer-reader.js';
import {
  BlobField,
  Convolution2DCommonField,
  Convolution2DField,
  DATA_FORMAT_NAMES,
  DATA_TYPE_NAMES,
  IdstQuanField,
  InputField,
  LayerNormField,
  NET_SOURCE_NAMES,
  NetField,
  OpField,
  SubGraphField,
  TensorDescribeField,
} from './mnn-schema.js';
import {
  BACKEND_OP_TYPES,
  GEOMETRY_OP_TYPES,
  MNN_COMMIT,
  OP_PARAMETER_NAMES,
  OP_TYPE_NAMES,
} from './op-coverage.generated.js';

// Reads what the planner and an operator need from a .mnn file without MNN: its interface, its op mix,
// its external weights and which backends lack some of its ops.

export interface MnnTensorInfo {
  name: string;
  /** Dimensions as stored; -1 marks a dimension fixed only at run time. Absent when the file has none. */
  shape?: number[];
  dataType?: string;
  format?: string;
}

export interface ExternalWeights {
  /** The file the offsets point into: the op's externalPath, else MNN's default `<model>.weight`. */
  files: string[];
  /** Number of ops whose parameters live outside the .mnn. */
  ops: number;
  /** Sum of the referenced byte ranges. */
  bytes: number;
  /** Highest offset + size referenced: the weight file must be at least this long. */
  extentBytes: number;
}

export interface MnnInspection {
  fileBytes: number;
  bizCode?: string;
  uuid?: string;
  sourceType?: string;
  inputs: MnnTensorInfo[];
  outputs: MnnTensorInfo[];
  opCount: number;
  /** Op type name → count, main graph and subgraphs together, most frequent first. */
  opTypes: Record<string, number>;
  subgraphs: { name: string; opCount: number }[];
  externalWeights?: ExternalWeights;
  /** Weight quantisation found in conv/matmul parameters: bits → number of ops. */
  weightQuantBits: Record<string, number>;
  /** Quantisation block along the input channel → number of ops (0 = one scale per output channel). */
  weightQuantBlocks: Record<string, number>;
  /** 'dynamic' when an input has an unknown dimension, so shapes are resolved at run time. */
  shapes: 'static' | 'dynamic';
  /** Per MNN backend, the op types of this model it has no execution for (they would fall back to CPU). */
  backendGaps: Record<string, string[]>;
  coverageCommit: string;
}

// Input ops are the tensors the caller feeds; Const and TrainableParam are weights the pipeline holds as
// constant tensors. None of them runs as an execution, so no backend registers them and none lacks them.
// If is split by MNN's Module API into per-branch submodules (IfModule) rather than run by a backend.
const NOT_EXECUTED = new Set(['Input', 'Const', 'TrainableParam', 'If']);
const GEOMETRY = new Set(GEOMETRY_OP_TYPES);
const PARAM_INPUT = OP_PARAMETER_NAMES.indexOf('Input') + 1;
const PARAM_BLOB = OP_PARAMETER_NAMES.indexOf('Blob') + 1;
const PARAM_CONV = OP_PARAMETER_NAMES.indexOf('Convolution2D') + 1;
const PARAM_LAYERNORM = OP_PARAMETER_NAMES.indexOf('LayerNorm') + 1;

interface OpScan {
  types: Map<string, number>;
  inputs: MnnTensorInfo[];
  external: { ops: number; bytes: number; extent: number; files: Set<string> };
  quantBits: Map<string, number>;
  quantBlocks: Map<string, number>;
  produced: Set<number>;
  consumed: Set<number>;
}

function scanOp(
  r: FlatBufferReader,
  op: number,
  tensorNames: string[] | undefined,
  scan: OpScan,
  defaultWeight: string,
): void {
  const typeValue = r.int32(op, OpField.type, 0);
  const typeName = OP_TYPE_NAMES.get(typeValue) ?? `unknown(${typeValue})`;
  scan.types.set(typeName, (scan.types.get(typeName) ?? 0) + 1);
  for (const i of r.int32Vector(op, OpField.inputIndexes, 'op input indexes') ?? []) scan.consumed.add(i);
  for (const o of r.int32Vector(op, OpField.outputIndexes, 'op output indexes') ?? []) scan.produced.add(o);
  const paramType = r.uint8(op, OpField.mainType, 0);
  const param = paramType === 0 ? undefined : r.subTable(op, OpField.main, 'op parameter');
  if (param === undefined) return;
  if (paramType === PARAM_INPUT && typeName === 'Input') {
    const outputs = r.int32Vector(op, OpField.outputIndexes, 'op output indexes') ?? [];
    const index = outputs[0];
    const name =
      (index !== undefined ? tensorNames?.[index] : undefined) ?? r.string(op, OpField.name, 'op name') ?? '';
    const dims = r.int32Vector(param, InputField.dims, 'input dims');
    scan.inputs.push({
      name,
      ...(dims ? { shape: dims } : {}),
      dataType: DATA_TYPE_NAMES[r.int32(param, InputField.dtype, 1)] ?? 'unknown',
      format: DATA_FORMAT_NAMES[r.int8(param, InputField.dformat, 2)] ?? 'unknown',
    });
    return;
  }
  let external: bigint[] | undefined;
  if (paramType === PARAM_BLOB) external = r.int64Vector(param, BlobField.external, 'blob external');
  else if (paramType === PARAM_LAYERNORM)
    external = r.int64Vector(param, LayerNormField.external, 'layernorm external');
  else if (paramType === PARAM_CONV) {
    external = r.int64Vector(param, Convolution2DField.external, 'convolution external');
    const quant = r.subTable(param, Convolution2DField.quanParameter, 'quantisation parameter');
    if (quant !== undefined) {
      const bits = r.int32(quant, IdstQuanField.aMaxOrBits, 0);
      const key = bits > 0 && bits <= 16 ? String(bits) : 'other';
      scan.quantBits.set(key, (scan.quantBits.get(key) ?? 0) + 1);
      const block = quantBlock(r, param, quant);
      if (block !== undefined)
        scan.quantBlocks.set(String(block), (scan.quantBlocks.get(String(block)) ?? 0) + 1);
    }
  }
  if (external && external.length >= 2) {
    const offset = Number(external[0]);
    const size = external.slice(1).reduce((a, b) => a + Number(b), 0);
    scan.external.ops++;
    scan.external.bytes += size;
    scan.external.extent = Math.max(scan.external.extent, offset + size);
    scan.external.files.add(r.string(op, OpField.externalPath, 'external path') ?? defaultWeight);
  }
}

/** Block size from the group count: groups = outputCount × inputCount / block. */
function quantBlock(r: FlatBufferReader, conv: number, quant: number): number | undefined {
  const groups = r.int32(quant, IdstQuanField.readType, 0);
  const common = r.subTable(conv, Convolution2DField.common, 'convolution common');
  if (common === undefined || groups <= 0) return undefined;
  const out = r.int32(common, Convolution2DCommonField.outputCount, 0);
  const input = r.int32(common, Convolution2DCommonField.inputCount, 0);
  if (out <= 0 || input <= 0 || groups % out !== 0) return undefined;
  const blocksPerChannel = groups / out;
  if (blocksPerChannel === 1) return 0;
  return input % blocksPerChannel === 0 ? input / blocksPerChannel : undefined;
}

function describeTensors(r: FlatBufferReader, net: number): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const d of r.tableVector(net, NetField.extraTensorDescribe, 'tensor descriptions') ?? []) {
    const name = r.string(d, TensorDescribeField.name, 'tensor name');
    const blob = r.subTable(d, TensorDescribeField.blob, 'tensor blob');
    const dims = blob === undefined ? undefined : r.int32Vector(blob, BlobField.dims, 'blob dims');
    if (name !== undefined && dims !== undefined) out.set(name, dims);
  }
  return out;
}

export function backendGaps(opTypes: Iterable<string>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const needed = [...opTypes].filter((t) => !NOT_EXECUTED.has(t) && !GEOMETRY.has(t));
  for (const [backend, supported] of Object.entries(BACKEND_OP_TYPES)) {
    const have = new Set(supported);
    out[backend] = needed.filter((t) => !have.has(t)).sort();
  }
  return out;
}

/** Inspect an in-memory .mnn; `label` names it in errors, `weightFileName` is MNN's default external file. */
export function inspectMnnBytes(
  bytes: Uint8Array,
  label: string,
  weightFileName = 'model.mnn.weight',
): MnnInspection {
  const r = new FlatBufferReader(bytes);
  try {
    if (bytes.length < 8) throw new FlatBufferFormatError(`only ${bytes.length} bytes`);
    const net = r.root();
    const tensorNames = r.stringVector(net, NetField.tensorName, 'tensor names');
    const scan: OpScan = {
      types: new Map(),
      inputs: [],
      external: { ops: 0, bytes: 0, extent: 0, files: new Set() },
      quantBits: new Map(),
      quantBlocks: new Map(),
      produced: new Set(),
      consumed: new Set(),
    };
    const ops = r.tableVector(net, NetField.oplists, 'op list') ?? [];
    for (const op of ops) scanOp(r, op, tensorNames, scan, weightFileName);
    const subgraphs: { name: string; opCount: number }[] = [];
    for (const g of r.tableVector(net, NetField.subgraphs, 'subgraphs') ?? []) {
      const nodes = r.tableVector(g, SubGraphField.nodes, 'subgraph nodes') ?? [];
      const names = r.stringVector(g, SubGraphField.tensors, 'subgraph tensor names');
      // Subgraph inputs are the graph's own plumbing, not the model's interface.
      const inner: OpScan = { ...scan, inputs: [], produced: new Set(), consumed: new Set() };
      for (const op of nodes) scanOp(r, op, names, inner, weightFileName);
      subgraphs.push({ name: r.string(g, SubGraphField.name, 'subgraph name') ?? '', opCount: nodes.length });
    }
    if (ops.length === 0 && subgraphs.length === 0) throw new FlatBufferFormatError('the net has no ops');
    const described = describeTensors(r, net);
    // Converters do not always record output names; then the outputs are the tensors no op consumes.
    let outputNames = r.stringVector(net, NetField.outputName, 'output names') ?? [];
    if (outputNames.length === 0)
      outputNames = [...scan.produced]
        .filter((t) => !scan.consumed.has(t))
        .sort((a, b) => a - b)
        .map((t) => tensorNames?.[t] ?? `#${t}`)
        .filter((name) => !scan.inputs.some((i) => i.name === name));
    const outputs = outputNames.map((name) => {
      const shape = described.get(name);
      return shape ? { name, shape } : { name };
    });
    const opTypes = Object.fromEntries([...scan.types].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
    const dynamic = scan.inputs.some((i) => i.shape === undefined || i.shape.some((d) => d < 0));
    const bizCode = r.string(net, NetField.bizCode, 'bizCode');
    const uuid = r.string(net, NetField.mnnUuid, 'uuid');
    // Absent means the converter wrote the schema default; saying "CAFFE" then would mislead.
    const sourceType = NET_SOURCE_NAMES[r.int8(net, NetField.sourceType, -1)];
    return {
      fileBytes: bytes.length,
      ...(bizCode !== undefined ? { bizCode } : {}),
      ...(uuid !== undefined ? { uuid } : {}),
      ...(sourceType !== undefined ? { sourceType } : {}),
      inputs: scan.inputs,
      outputs,
      opCount: [...scan.types.values()].reduce((a, b) => a + b, 0),
      opTypes,
      subgraphs,
      ...(scan.external.ops > 0
        ? {
            externalWeights: {
              files: [...scan.external.files].sort(),
              ops: scan.external.ops,
              bytes: scan.external.bytes,
              extentBytes: scan.external.extent,
            },
          }
        : {}),
      weightQuantBits: Object.fromEntries(scan.quantBits),
      weightQuantBlocks: Object.fromEntries(scan.quantBlocks),
      shapes: dynamic ? 'dynamic' : 'static',
      backendGaps: backendGaps(Object.keys(opTypes)),
      coverageCommit: MNN_COMMIT,
    };
  } catch (err) {
    if (err instanceof FlatBufferFormatError || err instanceof RangeError)
      throw new MnnEdgeError(
        'EMNNFORMAT',
        `${label} is not a valid .mnn model (truncated or corrupt): ${err.message}`,
        {
          file: label,
        },
      );
    throw err;
  }
}

export function inspectMnnFile(path: string): MnnInspection {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new MnnEdgeError('ENOENT', `Cannot read ${path}: ${(err as Error).message}`, { file: path });
  }
  const base = path.split('/').pop() ?? path;
  return inspectMnnBytes(bytes, path, `${base}.weight`);
}
