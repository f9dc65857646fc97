// The built agent (dist/), as it ships: benchmarks that time or weigh the daemon run it without the TypeScript
// loader. Built once when any source is newer than the build, so `npm run bench` builds at most once.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// bench/lib/ is two folders below the repository.
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Where tsc writes a source file of ours (`engine/index.ts` → `dist/engine/index.js`). Benchmarks name what they
 * load from dist/ by its source, through this function only, so a moved or renamed source fails at once here
 * (and in scripts/check-bench-entries.ts, which `npm run check:generated` runs) instead of loading a stale file
 * from an older build or failing on a fresh clone. `distDir` lets the check point at a build of its own.
 */
export function builtPath(source: string, distDir: string = join(repoRoot, 'dist')): string {
  if (!source.endsWith('.ts') || source.startsWith('/') || source.includes('..'))
    throw new Error(`builtPath: expected a TypeScript source relative to the repository, got "${source}"`);
  if (!existsSync(join(repoRoot, source)))
    throw new Error(
      `builtPath: ${source} does not exist: the benchmark names a source that moved or was removed`,
    );
  return join(distDir, source.replace(/\.ts$/, '.js'));
}

/** builtPath() as a URL for `await import()`. */
export function builtUrl(source: string): string {
  return pathToFileURL(builtPath(source)).href;
}

export const agentCli = builtPath('agent/cli/mnn-edge.ts');

function newest(dir: string): number {
  let max = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) max = Math.max(max, newest(p));
    else if (e.name.endsWith('.ts')) max = Math.max(max, statSync(p).mtimeMs);
  }
  return max;
}

/** Builds dist/ (npm run build) unless it is newer than every TypeScript source it is made from. */
export function ensureBuilt(): void {
  const sources = ['agent', 'engine/src', 'models', 'ota', 'board-support']
    .map((d) => join(repoRoot, d))
    .filter((d) => existsSync(d));
  const built = existsSync(agentCli) ? statSync(agentCli).mtimeMs : 0;
  if (built > 0 && sources.every((d) => newest(d) < built)) return;
  console.log('building dist/ (npm run build) so the agent runs as it ships, without the TypeScript loader');
  const build = spawnSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
  if (build.status !== 0) throw new Error(`npm run build failed with ${build.status}`);
}

/**
 * The node flags the systemd unit starts the daemon with (`ExecStart=/usr/bin/node FLAGS …/mnn-edge.js run`),
 * so that what the benchmarks time and weigh is what ships.
 */
export function daemonNodeFlags(): string[] {
  const line = unitLines().find((l) => l.startsWith('ExecStart='));
  const argv = line?.slice('ExecStart='.length).trim().split(/\s+/) ?? [];
  const script = argv.findIndex((a) => a.endsWith('/mnn-edge.js'));
  return argv[0]?.endsWith('/node') && script > 0 ? argv.slice(1, script) : [];
}

/**
 * The environment the systemd unit gives the daemon (its `Environment=NAME=VALUE` lines), less the data
 * directory, which each benchmark chooses.
 */
export function daemonEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of unitLines()) {
    const m = /^Environment=([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line.trim());
    if (m && m[1] !== 'MNN_EDGE_DATA_DIR') env[m[1]!] = m[2]!;
  }
  return env;
}

const unitPath = join(
  repoRoot,
  'yocto',
  'meta-mnn-edge',
  'recipes-mnn-edge',
  'mnn-edge',
  'files',
  'mnn-edge.service',
);

function unitLines(): string[] {
  return readFileSync(unitPath, 'utf8').split('\n');
}

const SPAN_UNITS_US: Record<string, number> = { us: 1, ms: 1e3, s: 1e6, sec: 1e6, min: 60e6, h: 3600e6 };

/**
 * The unit's WatchdogSec in microseconds, as systemd passes it in WATCHDOG_USEC, so that a benchmark of the
 * daemon also pays for the watchdog pings it sends on a board. Undefined when the unit has none.
 */
export function daemonWatchdogUsec(): number | undefined {
  const raw = unitLines()
    .find((l) => l.startsWith('WatchdogSec='))
    ?.slice('WatchdogSec='.length)
    .trim();
  if (raw === undefined || raw === '' || raw === '0' || raw === 'infinity') return undefined;
  // A systemd time span: "30s", "3min", "1min 30s"; a bare number is seconds.
  let usec = 0;
  for (const part of raw.split(/\s+/)) {
    const m = /^(\d+)([a-z]*)$/.exec(part);
    const scale = m ? SPAN_UNITS_US[m[2] || 's'] : undefined;
    if (!m || scale === undefined)
      throw new Error(`${unitPath}: cannot read WatchdogSec=${raw} (at "${part}")`);
    usec += Number(m[1]) * scale;
  }
  return usec;
}

/**
 * The agent configuration the daemon benchmarks (startup, idle) run: loopback HTTP on a free port and the
 * embedded broker, so that every module starts as on a board with no broker configured. Returns its path.
 */
export function writeBenchAgentConfig(dir: string): string {
  const path = join(dir, 'agent.json');
  writeFileSync(
    path,
    JSON.stringify({
      http: { bind: '127.0.0.1', port: 0 },
      mqtt: { embeddedBroker: { enabled: true, port: 0, host: '127.0.0.1' } },
    }),
  );
  return path;
}
