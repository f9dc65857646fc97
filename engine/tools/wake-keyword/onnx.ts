// A keyword head as an ONNX file (protobuf written by hand: a handful of message types), so MNNConvert turns
// it into `.mnn` the same way it converts openWakeWord's published heads: input `input` [1,16,96] → Flatten →
// Gemm → Relu → Gemm → Sigmoid → output `score` [1,1]. Field numbers are onnx.proto3's.

class Writer {
  readonly parts: Uint8Array[] = [];
  varint(v: number | bigint): this {
    let n = BigInt(v);
    if (n < 0n) n += 1n << 64n;
    const bytes: number[] = [];
    do {
      let b = Number(n & 0x7fn);
      n >>= 7n;
      if (n > 0n) b |= 0x80;
      bytes.push(b);
    } while (n > 0n);
    this.parts.push(Uint8Array.from(bytes));
    return this;
  }
  key(field: number, wire: 0 | 2 | 5): this {
    return this.varint((field << 3) | wire);
  }
  int(field: number, v: number): this {
    return this.key(field, 0).varint(v);
  }
  bytes(field: number, b: Uint8Array): this {
    this.key(field, 2).varint(b.length);
    this.parts.push(b);
    return this;
  }
  string(field: number, s: string): this {
    return this.bytes(field, new TextEncoder().encode(s));
  }
  message(field: number, m: Writer): this {
    return this.bytes(field, m.finish());
  }
  float(field: number, v: number): this {
    this.key(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.parts.push(b);
    return this;
  }
  finish(): Uint8Array {
    const out = new Uint8Array(this.parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

const FLOAT = 1;

function tensor(name: string, dims: number[], data: Float32Array): Writer {
  const w = new Writer();
  for (const d of dims) w.int(1, d);
  w.int(2, FLOAT).string(8, name);
  return w.bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
}

function valueInfo(name: string, dims: number[]): Writer {
  const shape = new Writer();
  for (const d of dims) shape.message(1, new Writer().int(1, d));
  const tensorType = new Writer().int(1, FLOAT).message(2, shape);
  return new Writer().string(1, name).message(2, new Writer().message(1, tensorType));
}

function node(op: string, inputs: string[], outputs: string[], attrs: Writer[] = []): Writer {
  const w = new Writer();
  for (const i of inputs) w.string(1, i);
  for (const o of outputs) w.string(2, o);
  w.string(3, `${op}_${outputs[0]}`).string(4, op);
  for (const a of attrs) w.message(5, a);
  return w;
}

const INT_ATTR = 2;

export interface DenseHead {
  inputShape: [number, number, number];
  hidden: number;
  /** [in, hidden], row-major. */
  w1: Float32Array;
  b1: Float32Array;
  /** [hidden, 1]. */
  w2: Float32Array;
  b2: number;
}

export function headToOnnx(head: DenseHead, producer = 'mnn-edge wake-keyword'): Uint8Array {
  const inSize = head.inputShape[1] * head.inputShape[2];
  if (
    head.w1.length !== inSize * head.hidden ||
    head.b1.length !== head.hidden ||
    head.w2.length !== head.hidden
  )
    throw new Error('headToOnnx: weight sizes do not match the input shape and hidden width');
  const graph = new Writer();
  graph.message(
    1,
    node('Flatten', ['input'], ['flat'], [new Writer().string(1, 'axis').int(3, 1).int(20, INT_ATTR)]),
  );
  graph.message(1, node('Gemm', ['flat', 'w1', 'b1'], ['hidden']));
  graph.message(1, node('Relu', ['hidden'], ['act']));
  graph.message(1, node('Gemm', ['act', 'w2', 'b2'], ['logit']));
  graph.message(1, node('Sigmoid', ['logit'], ['score']));
  graph.string(2, 'keyword_head');
  graph.message(5, tensor('w1', [inSize, head.hidden], head.w1));
  graph.message(5, tensor('b1', [head.hidden], head.b1));
  graph.message(5, tensor('w2', [head.hidden, 1], head.w2));
  graph.message(5, tensor('b2', [1], Float32Array.of(head.b2)));
  graph.message(11, valueInfo('input', [...head.inputShape]));
  graph.message(12, valueInfo('score', [1, 1]));
  const model = new Writer();
  model.int(1, 7); // ir_version 7 (ONNX 1.8): understood by every converter still in use
  model.string(2, producer);
  model.message(7, graph);
  model.message(8, new Writer().string(1, '').int(2, 13));
  return model.finish();
}
