import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { MnnEdgeError } from '../../../lib/errors.js';
import { modelsConfigOf, storeLimitsOf } from '../../../models/config.js';
import { isHubSource } from '../../../models/hub/source.js';
import {
  formatRef,
  type GcReport,
  type ImportProgress,
  type InstalledPackage,
  inspectMnnFile,
  type MnnInspection,
  MODEL_TASKS,
  ModelStore,
  type ModelTask,
  parseRef,
} from '../../../models/index.js';
import { pullShippedWake } from '../../../models/wake-shipped/install.js';
import { openStore } from '../../store/database.js';
import { type ParsedArgs, parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo, Command } from '../common/command.js';
import { formatBytes, table } from '../common/format.js';
import { configFromFlags } from './config.js';
import { HUB_USAGE, runHubPull, runHubRecommend, runHubSearch, runHubUpdate } from './models-hub.js';
import { MODELS_PULL_USAGE, runModelsPull } from './models-pull.js';

// `mnn-edge models …`: the operator's view of the model store and the .mnn inspector. Every subcommand
// prints a table for people and, with --json, one JSON document for scripts.

const USAGE = `mnn-edge models <ls | show <id>[@version] | inspect <file.mnn> | import <dir|tar> | keep <id@version> |
                 unkeep <id@version> | rm <id@version> | gc> [--data-dir DIR] [--config FILE] [--json]
  import:  [--id ID] [--version X.Y.Z] [--task TASK]  (for a bare MNN export without mnn-edge.json)
  rm:      [--force]  (also removes a kept version)
  gc:      [--budget BYTES]  (default: models.diskBudgetBytes; without one, every collectable version)
  pull:    ${MODELS_PULL_USAGE}
           (first boot: a signed package from a URL; a trusted key in the config, or a one-off --sha256)
           mnn-edge models pull wake[:NAME]  (the shipped wake word: its packaged copy, or assembled on a checkout)
${HUB_USAGE}`;

const STORE_FILE = 'agent.db';

export function parseByteSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?$/i.exec(text.trim());
  if (!m) throw new UsageError(`--budget expects a size such as 500M or 8G, got '${text}'`);
  const scale: Record<string, number> = { '': 1, B: 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };
  return Math.floor(Number(m[1]) * scale[(m[2] ?? '').charAt(0).toUpperCase()]!);
}

function flagsOf(p: InstalledPackage): string {
  const f = [
    p.inUse && 'in-use',
    p.kept && 'kept',
    p.rollbackHold && 'rollback',
    p.derived && 'derived',
    p.manifest.provenance && 'unsigned',
  ];
  return f.filter(Boolean).join(',') || '-';
}

/** A package in `ls --json`: its state without the manifest, and where a hub pull came from. */
function listEntry({ manifest: m, ...p }: InstalledPackage): Record<string, unknown> {
  const prov = m.provenance;
  return prov ? { ...p, trust: prov.trust, pulledFrom: `${prov.hub} ${prov.repo}@${prov.commit}` } : p;
}

/** Said once under the table when a hub pull is listed: what the `unsigned` flag means. */
function unsignedLegend(list: readonly InstalledPackage[]): string {
  return list.some((p) => p.manifest.provenance)
    ? 'unsigned: pulled from a model hub, no signature (trust on first use)\n'
    : '';
}

function when(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

function printJson(out: Writable, value: unknown): void {
  out.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A one-line bar redrawn in place; only on a terminal, so logs and pipes stay clean. */
export function progressLine(p: ImportProgress, width = 30): string {
  if (p.bytesTotal === undefined || p.bytesTotal === 0) return `${formatBytes(p.bytesDone)}  ${p.file}`;
  const frac = Math.min(1, p.bytesDone / p.bytesTotal);
  const full = Math.round(frac * width);
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}] ${(frac * 100).toFixed(0).padStart(3)}%  ${formatBytes(p.bytesDone)} / ${formatBytes(p.bytesTotal)}  ${p.file}`;
}

function printInspection(out: Writable, path: string, r: MnnInspection): void {
  const shape = (s?: number[]) => (s ? `[${s.join(',')}]` : '(unknown)');
  out.write(`${path}: ${formatBytes(r.fileBytes)}, ${r.opCount} ops, shapes ${r.shapes}`);
  out.write(`${r.sourceType ? `, converted from ${r.sourceType}` : ''}\n`);
  out.write('inputs:\n');
  for (const i of r.inputs) out.write(`  ${i.name}  ${i.dataType ?? ''} ${shape(i.shape)}\n`);
  out.write('outputs:\n');
  for (const o of r.outputs) out.write(`  ${o.name}${o.shape ? `  ${shape(o.shape)}` : ''}\n`);
  out.write('op types:\n');
  for (const [t, n] of Object.entries(r.opTypes)) out.write(`  ${t.padEnd(20)} ${n}\n`);
  if (r.subgraphs.length > 0) out.write(`subgraphs: ${r.subgraphs.length}\n`);
  if (r.externalWeights) {
    const w = r.externalWeights;
    out.write(`external weights: ${formatBytes(w.bytes)} in ${w.files.join(', ')} (${w.ops} ops)\n`);
  }
  const bits = Object.entries(r.weightQuantBits);
  const blocks = Object.entries(r.weightQuantBlocks).map(([b, n]) =>
    b === '0' ? `per channel × ${n}` : `block ${b} × ${n}`,
  );
  if (bits.length > 0)
    out.write(
      `weight quantisation: ${bits.map(([b, n]) => `${b}-bit × ${n}`).join(', ')}` +
        (blocks.length > 0 ? ` (${blocks.join(', ')})` : '') +
        '\n',
    );
  out.write(`backends lacking ops (MNN ${r.coverageCommit}):\n`);
  for (const [b, gaps] of Object.entries(r.backendGaps))
    out.write(
      `  ${b.padEnd(9)} ${gaps.length === 0 ? 'all ops available' : `falls back to CPU for ${gaps.join(', ')}`}\n`,
    );
}

function openModelStore(
  args: ParsedArgs,
  io: CliIo,
): { store: ModelStore; close: () => void; budget?: number } {
  const { config } = configFromFlags(args, io.env);
  const models = modelsConfigOf(config['models']);
  const db = openStore(join(config.dataDir, STORE_FILE));
  const { store } = ModelStore.open({
    dataDir: config.dataDir,
    db,
    limits: storeLimitsOf(models),
  });
  return {
    store,
    close: () => {
      store.close();
      db.close();
    },
    ...(models.diskBudgetBytes !== undefined ? { budget: models.diskBudgetBytes } : {}),
  };
}

function one(args: ParsedArgs, what: string): string {
  const [first, ...rest] = args.positionals.slice(1);
  if (first === undefined) throw new UsageError(`missing ${what}`);
  if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
  return first;
}

type StoreArgs = {
  store: ModelStore;
  budget: number | undefined;
  args: ParsedArgs;
  io: CliIo;
  json: boolean;
};

/** `models inspect <file.mnn>`: reads the file itself, no store needed. */
function inspectFile(args: ParsedArgs, io: CliIo, json: boolean): number {
  const path = one(args, 'the .mnn file to inspect');
  const report = inspectMnnFile(path);
  const weight = report.externalWeights ? join(dirname(path), report.externalWeights.files[0]!) : undefined;
  const weightBytes = weight && existsSync(weight) ? statSync(weight).size : undefined;
  if (json)
    printJson(io.stdout, {
      file: path,
      ...report,
      ...(weightBytes !== undefined ? { weightFileBytes: weightBytes } : {}),
    });
  else printInspection(io.stdout, path, report);
  if (
    report.externalWeights &&
    (weightBytes === undefined || weightBytes < report.externalWeights.extentBytes)
  ) {
    io.stderr.write(
      `warning: ${path} references ${report.externalWeights.extentBytes} bytes of ${report.externalWeights.files[0]}, ` +
        `which ${weightBytes === undefined ? 'does not exist' : `has only ${weightBytes}`}\n`,
    );
    return 1;
  }
  return 0;
}

function listModels({ store, args, io, json }: StoreArgs): number {
  if (args.positionals.length > 1) throw new UsageError(`unexpected argument '${args.positionals[1]}'`);
  const list = store.list();
  if (json) printJson(io.stdout, list.map(listEntry));
  else if (list.length === 0) io.stdout.write(`no models installed in ${store.root}\n`);
  else
    io.stdout.write(
      table([
        ['ID', 'VERSION', 'TASK', 'SIZE', 'FLAGS', 'LAST USED'],
        ...list.map((p) => [
          p.id,
          p.version,
          p.task,
          formatBytes(p.sizeBytes),
          flagsOf(p),
          when(p.lastUsedAt),
        ]),
      ]) + unsignedLegend(list),
    );
  return 0;
}

function showModel({ store, args, io, json }: StoreArgs): number {
  const target = one(args, 'the model id');
  const ref = target.includes('@') ? parseRef(target) : undefined;
  const list = store
    .list()
    .filter((p) => (ref ? p.id === ref.id && p.version === ref.version : p.id === target));
  if (list.length === 0) throw new MnnEdgeError('ENOENT', `Model ${target} is not installed`);
  if (json) printJson(io.stdout, list);
  else
    for (const p of list) {
      io.stdout.write(
        `${formatRef(p)}  ${p.task}  ${formatBytes(p.sizeBytes)}  ${flagsOf(p)}\n  dir: ${p.dir}\n`,
      );
      const prov = p.manifest.provenance;
      if (prov)
        io.stdout.write(
          `  from ${prov.hub} ${prov.repo}@${prov.revision} = commit ${prov.commit}, pulled ${prov.pulledAt}; ` +
            'unsigned: trusted on first use\n',
        );
      if (p.manifest.derived) io.stdout.write(`  derived: ${p.manifest.derived.assumptions.join('; ')}\n`);
      for (const v of p.manifest.variants) {
        const req = v.requirements;
        io.stdout.write(
          `  variant ${v.name}: backend ${req.backend}, weights ${v.precision.weights}, ` +
            `activations ${v.precision.activations}, ${formatBytes(v.memory.weightsBytes)} weights` +
            (v.memory.kvCacheBytes !== undefined
              ? ` + ${formatBytes(v.memory.kvCacheBytes)} KV at ${v.memory.contextLength} tokens`
              : '') +
            (req.engineFeatures?.length ? `, needs ${req.engineFeatures.join('+')}` : '') +
            '\n',
        );
        for (const f of v.files) io.stdout.write(`    ${f.path}  ${f.length}  ${f.sha256.slice(0, 16)}…\n`);
      }
    }
  return 0;
}

async function importModel({ store, args, io, json }: StoreArgs): Promise<number> {
  const source = one(args, 'the package (directory or .tar/.tar.gz) to import');
  const task = stringFlag(args, 'task');
  if (task !== undefined && !(MODEL_TASKS as readonly string[]).includes(task))
    throw new UsageError(`--task must be one of ${MODEL_TASKS.join(', ')}, got '${task}'`);
  const tty = (io.stderr as Writable & { isTTY?: boolean }).isTTY === true;
  const off = tty ? store.on('progress', (p) => io.stderr.write(`\r\x1b[2K${progressLine(p)}`)) : undefined;
  let pkg: InstalledPackage;
  try {
    const id = stringFlag(args, 'id');
    const version = stringFlag(args, 'version');
    pkg = await store.import(source, {
      ...(id !== undefined ? { id } : {}),
      ...(version !== undefined ? { version } : {}),
      ...(task !== undefined ? { task: task as ModelTask } : {}),
    });
  } finally {
    off?.();
    if (tty) io.stderr.write('\r\x1b[2K');
  }
  if (json) printJson(io.stdout, pkg);
  else
    io.stdout.write(
      `installed ${formatRef(pkg)} (${pkg.task}, ${formatBytes(pkg.sizeBytes)}${pkg.derived ? ', manifest derived from the MNN export' : ''})\n`,
    );
  return 0;
}

function keepModel({ store, args, io, json }: StoreArgs, sub: 'keep' | 'unkeep'): number {
  const ref = parseRef(one(args, 'the model as <id>@<version>'));
  store.keep(ref, sub === 'keep');
  if (json) printJson(io.stdout, store.get(ref));
  else
    io.stdout.write(
      `${formatRef(ref)} ${sub === 'keep' ? 'is kept: gc will not remove it' : 'is no longer kept'}\n`,
    );
  return 0;
}

function removeModel({ store, args, io, json }: StoreArgs): number {
  const ref = parseRef(one(args, 'the model as <id>@<version>'));
  store.remove(ref, { force: args.flags['force'] === true });
  if (json) printJson(io.stdout, { removed: ref });
  else io.stdout.write(`removed ${formatRef(ref)}\n`);
  return 0;
}

function gcModels({ store, budget, args, io, json }: StoreArgs): number {
  if (args.positionals.length > 1) throw new UsageError(`unexpected argument '${args.positionals[1]}'`);
  const flag = stringFlag(args, 'budget');
  const report: GcReport = store.gc(flag !== undefined ? parseByteSize(flag) : budget);
  if (json) printJson(io.stdout, report);
  else {
    for (const r of report.removed) io.stdout.write(`removed ${formatRef(r)}\n`);
    io.stdout.write(
      `freed ${formatBytes(report.freedBytes)}; store holds ${formatBytes(report.totalBytes)}\n`,
    );
    if (report.overBudgetBytes > 0)
      io.stdout.write(
        `still ${formatBytes(report.overBudgetBytes)} over budget: the rest is in use, kept, held for rollback or the newest version\n`,
      );
  }
  return 0;
}

/** `pull wake` / `pull wake:computer`: the keyword the product ships, not a download from anywhere. */
const WAKE_SOURCE = /^wake(:[a-z0-9_-]+)?$/;

async function pullWake(argv: string[], io: CliIo): Promise<number> {
  const args = parseArgs(argv, { values: ['data-dir', 'config'], booleans: ['json'] });
  const [source, ...rest] = args.positionals;
  if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
  const name = source?.split(':')[1];
  const { store, close } = openModelStore(args, io);
  try {
    const r = await pullShippedWake(store, {
      ...(name !== undefined ? { name } : {}),
      env: io.env,
      log: (line) => io.stderr.write(`${line}\n`),
    });
    const ref = formatRef({ id: r.shipped.id, version: r.shipped.version });
    if (args.flags['json'] === true)
      printJson(io.stdout, { model: ref, keyword: r.shipped.name, status: r.status, from: r.shipped.dir });
    else
      io.stdout.write(
        `${r.status === 'installed' ? 'installed' : 'already installed:'} ${ref} (wake word ${r.shipped.name}, from ${r.shipped.dir})\n`,
      );
    return 0;
  } finally {
    close();
  }
}

/** The subcommands that work on the installed store. */
const STORE_SUBCOMMANDS: Record<string, (a: StoreArgs) => number | Promise<number>> = {
  ls: listModels,
  show: showModel,
  import: importModel,
  keep: (a) => keepModel(a, 'keep'),
  unkeep: (a) => keepModel(a, 'unkeep'),
  rm: removeModel,
  gc: gcModels,
};

async function run(argv: string[], io: CliIo): Promise<number> {
  // `pull` is OTA's downloader and verification with its own flags (--targets, --sha256).
  // A hub model (hf://, ms://, a hub's web page) is the model hubs' path; any other URL is a signed package.
  if (argv[0] === 'pull' && WAKE_SOURCE.test(argv[1] ?? '')) return pullWake(argv.slice(1), io);
  if (argv[0] === 'pull' && argv.slice(1).some(isHubSource)) return runHubPull(argv.slice(1), io);
  if (argv[0] === 'pull') return runModelsPull(argv.slice(1), io);
  if (argv[0] === 'update') return runHubUpdate(argv.slice(1), io);
  if (argv[0] === 'search') return runHubSearch(argv.slice(1), io);
  if (argv[0] === 'recommend') return runHubRecommend(argv.slice(1), io);
  const args = parseArgs(argv, {
    values: ['data-dir', 'config', 'id', 'version', 'task', 'budget'],
    booleans: ['json', 'force'],
  });
  const sub = args.positionals[0];
  const json = args.flags['json'] === true;
  if (sub === undefined) throw new UsageError('missing subcommand');
  if (sub === 'inspect') return inspectFile(args, io, json);
  const handler = STORE_SUBCOMMANDS[sub];
  if (!handler) throw new UsageError(`unknown subcommand '${sub}'`);
  const { store, close, budget } = openModelStore(args, io);
  try {
    return await handler({ store, budget, args, io, json });
  } finally {
    close();
  }
}

export const command: Command = {
  name: 'models',
  summary: 'list, import, pull (signed packages, Hugging Face, ModelScope), search, recommend and gc models',
  usage: USAGE,
  run,
};
