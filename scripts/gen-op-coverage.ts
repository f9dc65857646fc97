// Generates models/inspect/op-coverage.generated.ts from an MNN source checkout (outside this repository):
//   npx tsx scripts/gen-op-coverage.ts --mnn /opt/src/MNN [--commit <sha>] [--out <file>]
// It reads the OpType enum and the OpParameter union from schema/default/MNN.fbs, the op types each backend
// registers a creator for (source/backend/<name>/…), and the op types MNN's geometry layer rewrites into
// generic ops for every backend (source/geometry/…). The table is data for the planner's "would fall back to
// CPU" warning, so it must reflect real source, never hand edits: rerun this after moving the MNN pin.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Args {
  mnn: string;
  commit: string | undefined;
  out: string;
}

function parseCli(argv: string[]): Args {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const args: Args = {
    mnn: '',
    commit: undefined,
    out: resolve(here, '..', 'models', 'inspect', 'op-coverage.generated.ts'),
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--mnn') args.mnn = value;
    else if (flag === '--commit') args.commit = value;
    else if (flag === '--out') args.out = resolve(value);
    else throw new Error(`unknown option ${flag}`);
    i++;
  }
  if (!args.mnn)
    throw new Error('usage: gen-op-coverage.ts --mnn <MNN checkout> [--commit <sha>] [--out <file>]');
  return args;
}

function gitCommit(dir: string): string | undefined {
  try {
    return execFileSync('git', ['-C', dir, 'rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
}

function block(text: string, header: RegExp, what: string): string {
  const m = header.exec(text);
  if (!m) throw new Error(`${what} not found`);
  const start = text.indexOf('{', m.index) + 1;
  return text.slice(start, text.indexOf('}', start));
}

/** enum OpType : int { A, B = 128, C, … } → value → name, with flatc's implicit numbering. */
export function parseOpTypeEnum(fbs: string): Map<number, string> {
  const body = block(stripComments(fbs), /enum\s+OpType\s*:\s*int\s*\{/, 'enum OpType');
  const out = new Map<number, string>();
  let next = 0;
  for (const item of body
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z_]\w*)\s*(?:=\s*(\d+))?$/.exec(item);
    if (!m) throw new Error(`cannot parse OpType item ${JSON.stringify(item)}`);
    const value = m[2] === undefined ? next : Number(m[2]);
    out.set(value, m[1]!);
    next = value + 1;
  }
  return out;
}

/** union OpParameter { A, B, … } → member names; flatbuffers numbers them from 1 (0 = NONE). */
export function parseOpParameterUnion(fbs: string): string[] {
  const body = block(stripComments(fbs), /union\s+OpParameter\s*\{/, 'union OpParameter');
  return body
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => s.split(/[\s:]/)[0]!);
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (/\.(cpp|cc|mm|cu|hpp|h)$/.test(name)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

// The ways MNN backends register an op creator, each capturing the OpType name.
const REGISTRATION_PATTERNS: RegExp[] = [
  /REGISTER_\w*CREATOR\w*\(\s*\w+\s*,\s*OpType_(\w+)/g, // CPU, Metal, NNAPI, CoreML, OpenCL macros
  /addCreator\(\s*OpType_(\w+)/g, // Vulkan, CPU internals
  /\w*CreatorRegister\s*<[^;]*?>\s*\w+\s*\(\s*OpType_(\w+)/g, // CUDA, TensorRT, HiAI, OpenGL, MUSA
  /___\w+?__OpType_(\w+?)__/g, // OpenCL and QNN registration functions
];

function registeredOps(files: string[]): Set<string> {
  const ops = new Set<string>();
  for (const f of files) {
    const text = stripComments(readFileSync(f, 'utf8'));
    for (const re of REGISTRATION_PATTERNS) for (const m of text.matchAll(re)) ops.add(m[1]!);
  }
  return ops;
}

function geometryOps(files: string[]): Set<string> {
  const ops = new Set<string>();
  for (const f of files) {
    const text = stripComments(readFileSync(f, 'utf8'));
    for (const m of text.matchAll(/registerGeometryComputer\(\s*\w+\s*,\s*\{([^}]*)\}/g))
      for (const op of m[1]!.matchAll(/OpType_(\w+)/g)) ops.add(op[1]!);
  }
  return ops;
}

// Backend directory → the name the manifest and planner use (MNNForwardType, lower-case).
const BACKEND_DIRS: Record<string, string> = {
  cpu: 'cpu',
  opencl: 'opencl',
  vulkan: 'vulkan',
  metal: 'metal',
  cuda: 'cuda',
  opengl: 'opengl',
  nnapi: 'nnapi',
  coreml: 'coreml',
  qnn: 'qnn',
  hiai: 'hiai',
  tensorrt: 'tensorrt',
  musa: 'musa',
};

function main(): void {
  const args = parseCli(process.argv.slice(2));
  const root = resolve(args.mnn);
  const fbsPath = join(root, 'schema', 'default', 'MNN.fbs');
  if (!existsSync(fbsPath))
    throw new Error(`${fbsPath} not found: --mnn must point at an MNN source checkout`);
  const commit = args.commit ?? gitCommit(root);
  if (!commit)
    throw new Error(`${root} is not a git checkout; pass --commit <sha> naming the MNN commit it holds`);
  const fbs = readFileSync(fbsPath, 'utf8');
  const opTypes = parseOpTypeEnum(fbs);
  const params = parseOpParameterUnion(fbs);
  const known = new Set(opTypes.values());
  const geometry = [...geometryOps(sourceFiles(join(root, 'source', 'geometry')))]
    .filter((o) => known.has(o))
    .sort();
  const backends: Record<string, string[]> = {};
  for (const [dir, name] of Object.entries(BACKEND_DIRS)) {
    const path = join(root, 'source', 'backend', dir);
    if (!existsSync(path)) continue;
    const ops = [...registeredOps(sourceFiles(path))].filter((o) => known.has(o)).sort();
    if (ops.length > 0) backends[name] = ops;
  }
  // Single quotes as biome writes them; every value is an identifier or a commit id, so no escaping is needed.
  const q = (s: string) => {
    if (!/^[\w.-]+$/.test(s)) throw new Error(`unexpected characters in ${JSON.stringify(s)}`);
    return `'${s}'`;
  };
  const lines = [
    '// GENERATED by scripts/gen-op-coverage.ts from an MNN source checkout. Do not edit; rerun the script.',
    `// Source: MNN at commit ${commit} (schema/default/MNN.fbs, source/backend/*, source/geometry/*).`,
    '',
    `export const MNN_COMMIT = ${q(commit)};`,
    '',
    '/** OpType enum value → name (schema/default/MNN.fbs). */',
    'export const OP_TYPE_NAMES: ReadonlyMap<number, string> = new Map([',
    ...[...opTypes].map(([v, n]) => `  [${v}, ${q(n)}],`),
    ']);',
    '',
    '/** OpParameter union members; index + 1 is the union type tag (0 = NONE). */',
    'export const OP_PARAMETER_NAMES: readonly string[] = [',
    ...params.map((p) => `  ${q(p)},`),
    '];',
    '',
    "/** Op types MNN's geometry layer rewrites into generic ops on every backend (source/geometry). */",
    'export const GEOMETRY_OP_TYPES: readonly string[] = [',
    ...geometry.map((o) => `  ${q(o)},`),
    '];',
    '',
    '/** Per backend, the op types it registers an execution creator for (source/backend/<name>). */',
    'export const BACKEND_OP_TYPES: Readonly<Record<string, readonly string[]>> = {',
    // One op per line: the layout biome keeps, so a regenerated file diffs cleanly.
    ...Object.entries(backends).flatMap(([b, ops]) => [
      `  ${b}: [`,
      ...ops.map((o) => `    ${q(o)},`),
      '  ],',
    ]),
    '};',
    '',
  ];
  writeFileSync(args.out, lines.join('\n'));
  console.log(
    `wrote ${args.out}: ${opTypes.size} op types, ${geometry.length} geometry ops, backends ${Object.keys(backends).join(', ')} (MNN ${commit})`,
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
