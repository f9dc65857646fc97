import { totalmem } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { matchProfile } from '../../../board-support/index.js';
import { Downloader } from '../../../lib/download/downloader.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import { modelsConfigOf, storeLimitsOf } from '../../../models/config.js';
import { hubClient, hubSettings } from '../../../models/hub/clients.js';
import { describeRepos } from '../../../models/hub/describe.js';
import { pullFromHub } from '../../../models/hub/pull.js';
import { formatHubSource, parseHubSource } from '../../../models/hub/source.js';
import type { HubClient } from '../../../models/hub/types.js';
import { diffSnapshot } from '../../../models/hub/update.js';
import { formatRef, type HubName, ModelStore } from '../../../models/index.js';
import { resolveOtaConfig } from '../../../ota/config.js';
import type { AgentConfig } from '../../config/schema.js';
import { DEFAULT_CONTEXT, planPolicyFromConfig, type RuntimeConfig } from '../../config/sections/slots.js';
import { detect } from '../../detect/detect.js';
import { boardFromCapabilities } from '../../detect/plan-board.js';
import { hubCandidates } from '../../installed-models/hub-catalog.js';
import { mib } from '../../plan/memory.js';
import { budgetReason, RECOMMEND_ROLES, type RecommendRole, recommend } from '../../plan/recommend.js';
import { ProbeStore } from '../../runtime/desired/probe-store.js';
import { openStore } from '../../store/database.js';
import { type ParsedArgs, parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo } from '../common/command.js';
import { formatBytes, table } from '../common/format.js';
import { progressPrinter } from '../common/pull-progress.js';
import { configFromFlags } from './config.js';

// `models pull hf://…|ms://…`, `models update`, `models search`, `models recommend`: the model hubs from the
// command line. Hub packages are unsigned: every line that shows one says so.

export const HUB_USAGE = `  pull:      <hf://owner/repo[@rev] | ms://owner/repo[@rev] | hub web URL> [--id ID] [--version X.Y.Z]
             (unsigned hub pull: trusted on first use; same commit again does nothing)
  update:    <id>  (is there a newer commit of the repository it was pulled from, and what would change)
  search:    [words…] [--source hf|ms] [--owner ORG] [--limit N]  (MNN exports; default owners taobao-mnn / MNN)
  recommend: [--source hf|ms] [--owner ORG] [--limit N] [--role ROLE]  (ranked for this board)`;

const FLAGS = {
  values: ['data-dir', 'config', 'root', 'id', 'version', 'source', 'owner', 'limit', 'role'],
  booleans: ['json'],
};

function printJson(out: Writable, value: unknown): void {
  out.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Sizes the hub did not state print as '-'. */
function sizeText(n: number | undefined): string {
  return n === undefined ? '-' : formatBytes(n);
}

interface Opened {
  config: AgentConfig;
  store: ModelStore;
  db: ReturnType<typeof openStore>;
  close(): void;
}

function open(args: ParsedArgs, io: CliIo): Opened {
  const { config } = configFromFlags(args, io.env);
  const models = modelsConfigOf(config['models']);
  const db = openStore(join(config.dataDir, 'agent.db'));
  const { store } = ModelStore.open({
    dataDir: config.dataDir,
    db,
    limits: storeLimitsOf(models),
  });
  return {
    config,
    store,
    db,
    close: () => {
      store.close();
      db.close();
    },
  };
}

function clientOf(hub: HubName, config: AgentConfig, env: NodeJS.ProcessEnv): HubClient {
  return hubClient(hub, hubSettings(hub, modelsConfigOf(config['models']), env));
}

function sourceFlag(args: ParsedArgs): HubName {
  const s = stringFlag(args, 'source') ?? 'hf';
  if (s === 'hf' || s === 'huggingface') return 'huggingface';
  if (s === 'ms' || s === 'modelscope') return 'modelscope';
  throw new UsageError(`--source must be hf or ms, got '${s}'`);
}

function limitFlag(args: ParsedArgs, fallback: number): number {
  const text = stringFlag(args, 'limit');
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new UsageError(`--limit must be 1–100, got '${text}'`);
  return n;
}

/** Ctrl-C stops the download cleanly; what arrived stays for the next run to resume. */
function interruptible(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onSignal = () =>
    controller.abort(new MnnEdgeError('EABORTED', 'Interrupted: run the same pull again to resume'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

export async function runHubPull(argv: string[], io: CliIo): Promise<number> {
  const args = parseArgs(argv, FLAGS);
  const [source, ...rest] = args.positionals;
  if (source === undefined) throw new UsageError('missing hub model (hf://owner/repo or ms://owner/repo)');
  if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
  const ref = parseHubSource(source);
  const o = open(args, io);
  const stop = interruptible();
  const progress = progressPrinter(io.stderr as Writable & { isTTY?: boolean });
  try {
    const ota = resolveOtaConfig(o.config['ota']);
    const client = clientOf(ref.hub, o.config, io.env);
    const id = stringFlag(args, 'id');
    const version = stringFlag(args, 'version');
    const result = await pullFromHub(
      ref,
      {
        client,
        store: o.store,
        downloader: new Downloader(ota.download),
        workRoot: join(o.config.dataDir, 'hub-downloads'),
        headroomBytes: ota.download.headroomBytes,
      },
      {
        signal: stop.signal,
        onProgress: (p) => progress.update(p),
        ...(id !== undefined ? { id } : {}),
        ...(version !== undefined ? { version } : {}),
      },
    );
    progress.finish();
    if (args.flags['json'] === true) printJson(io.stdout, result);
    else if (result.status === 'unchanged')
      io.stdout.write(
        `${formatRef(result.ref)} is already ${result.repo}@${result.commit.slice(0, 12)}: nothing to do\n`,
      );
    else {
      const pkg = o.store.get(result.ref)!;
      io.stdout.write(
        `installed ${formatRef(result.ref)} from ${client.hub} ${result.repo}@${result.commit.slice(0, 12)} ` +
          `(${pkg.task}, ${sizeText(result.totalBytes)}, ${result.fetchedBytes} bytes downloaded; unsigned: trusted on first use)\n`,
      );
      if (result.skipped.length > 0) io.stdout.write(`not fetched: ${result.skipped.join(', ')}\n`);
    }
    return 0;
  } finally {
    progress.finish();
    stop.dispose();
    o.close();
  }
}

export async function runHubUpdate(argv: string[], io: CliIo): Promise<number> {
  const args = parseArgs(argv, FLAGS);
  const [id, ...rest] = args.positionals;
  if (id === undefined) throw new UsageError('missing model id');
  if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
  const o = open(args, io);
  try {
    const pkg = o.store
      .list()
      .filter((p) => p.id === id && p.manifest.provenance !== undefined)
      .at(-1);
    if (!pkg) {
      const any = o.store.latest(id);
      throw new MnnEdgeError(
        'ENOENT',
        any
          ? `${id} was not pulled from a hub: it has no repository to update from`
          : `Model ${id} is not installed`,
      );
    }
    const prov = pkg.manifest.provenance!;
    const client = clientOf(prov.hub, o.config, io.env);
    const [owner, name] = prov.repo.split('/') as [string, string];
    const snapshot = await client.snapshot({ hub: prov.hub, owner, name, revision: prov.revision });
    const diff = diffSnapshot(prov, snapshot);
    if (args.flags['json'] === true) printJson(io.stdout, { model: formatRef(pkg), ...diff });
    else if (!diff.newer)
      io.stdout.write(
        `${formatRef(pkg)} is up to date: ${prov.repo}@${prov.revision} is still ${prov.commit.slice(0, 12)}\n`,
      );
    else {
      io.stdout.write(
        `${prov.repo}@${prov.revision} moved: ${prov.commit.slice(0, 12)} → ${snapshot.commit.slice(0, 12)}\n`,
      );
      for (const f of diff.added) io.stdout.write(`  added    ${f.path}  ${sizeText(f.size)}\n`);
      for (const f of diff.changed) io.stdout.write(`  changed  ${f.path}  ${sizeText(f.size)}\n`);
      for (const p of diff.removed) io.stdout.write(`  removed  ${p}\n`);
      if (diff.added.length + diff.changed.length + diff.removed.length === 0)
        io.stdout.write('  no file changed (a commit that touched nothing the package holds)\n');
      io.stdout.write(
        `would download ${sizeText(diff.downloadBytes)}; to install it: mnn-edge models pull ${formatHubSource({ hub: prov.hub, owner, name, revision: prov.revision })} --id ${pkg.id}\n`,
      );
    }
    return 0;
  } finally {
    o.close();
  }
}

export async function runHubSearch(argv: string[], io: CliIo): Promise<number> {
  const args = parseArgs(argv, FLAGS);
  const { config } = configFromFlags(args, io.env);
  const hub = sourceFlag(args);
  const settings = hubSettings(hub, modelsConfigOf(config['models']), io.env);
  const client = hubClient(hub, settings);
  const owner = stringFlag(args, 'owner') ?? settings.owner;
  const hits = await client.search(args.positionals, { owner, limit: limitFlag(args, 20) });
  const described = await describeRepos(client, hits);
  if (args.flags['json'] === true) {
    printJson(io.stdout, described);
    return 0;
  }
  if (described.length === 0) {
    io.stdout.write(`no models by ${owner} on ${hub} match '${args.positionals.join(' ')}'\n`);
    return 0;
  }
  const prefix = hub === 'huggingface' ? 'hf' : 'ms';
  io.stdout.write(
    table([
      ['MODEL', 'SIZE', 'TASK', 'QUANT', 'NOTE'],
      ...described.map((d) => [
        `${prefix}://${d.hit.repo}`,
        sizeText(d.totalBytes),
        d.export ? `${d.export.task ?? '-'} (${d.export.kind})` : '-',
        d.export?.quant ?? '-',
        d.problem !== undefined
          ? d.problem.slice(0, 80)
          : d.export?.backend !== 'cpu'
            ? `built for ${d.export?.backend}`
            : '',
      ]),
    ]),
  );
  return 0;
}

export async function runHubRecommend(argv: string[], io: CliIo): Promise<number> {
  const args = parseArgs(argv, FLAGS);
  const roleText = stringFlag(args, 'role');
  if (roleText !== undefined && !(RECOMMEND_ROLES as readonly string[]).includes(roleText))
    throw new UsageError(`--role must be one of ${RECOMMEND_ROLES.join(', ')}, got '${roleText}'`);
  const o = open(args, io);
  try {
    const hub = sourceFlag(args);
    const settings = hubSettings(hub, modelsConfigOf(o.config['models']), io.env);
    const client = hubClient(hub, settings);
    const owner = stringFlag(args, 'owner') ?? settings.owner;
    const hits = await client.search(args.positionals, { owner, limit: limitFlag(args, 30) });
    const described = await describeRepos(client, hits);
    const candidates = hubCandidates(described, hub, o.store);
    const caps = detect({ root: o.config.root });
    const board = boardFromCapabilities(caps, matchProfile(caps), { ramBytes: totalmem() });
    const policy = planPolicyFromConfig(o.config['runtime'] as RuntimeConfig | undefined);
    const probes = new ProbeStore(o.db).all().filter((p) => p.boardId === board.boardId);
    const engineVersion = probes.at(-1)?.engineVersion ?? 'unknown';
    const roles = roleText !== undefined ? [roleText as RecommendRole] : RECOMMEND_ROLES;
    const contextTokens = Object.fromEntries(RECOMMEND_ROLES.map((r) => [r, DEFAULT_CONTEXT[r]])) as Record<
      RecommendRole,
      number
    >;
    const ranked = recommend({ board, policy, probes, engineVersion, contextTokens, candidates }, roles);
    if (args.flags['json'] === true) {
      printJson(io.stdout, {
        board: board.boardId,
        budget: budgetReason(board, policy),
        recommendations: ranked,
      });
      return 0;
    }
    const prefix = hub === 'huggingface' ? 'hf' : 'ms';
    io.stdout.write(`board ${board.boardId}: ${budgetReason(board, policy)}\n`);
    for (const role of roles) {
      const mine = ranked.filter((r) => r.role === role);
      io.stdout.write(`\n${role}:\n`);
      if (mine.length === 0) {
        io.stdout.write(`  no ${owner} export on ${hub} for this role\n`);
        continue;
      }
      for (const [i, r] of mine.entries()) {
        const mark = r.fits ? (i === 0 ? '★' : '✓') : '✗';
        io.stdout.write(
          `  ${mark} ${prefix}://${r.repo}  ${r.fits ? mib(r.memoryBytes) : 'does not fit'}` +
            `${r.backend ? ` on ${r.backend}` : ''}${r.decodeTokPerSec !== undefined ? `, ~${r.decodeTokPerSec.toFixed(1)} tok/s` : ''}\n`,
        );
        for (const why of r.reasons) io.stdout.write(`      ${why}\n`);
      }
    }
    io.stdout.write('\nhub models are unsigned: a pull is trusted on first use\n');
    return 0;
  } finally {
    o.close();
  }
}
