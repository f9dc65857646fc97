// `tsx scripts/check-bench-entries.ts [--no-build]` (part of `npm run check:generated`): every benchmark can run
// from a fresh clone. Benchmarks load the built agent from dist/ by naming its source (bench/lib/dist.ts
// builtPath/builtUrl); this reads every such name in bench/, builds dist/ as `npm run build` does (from empty),
// imports each module a benchmark imports and checks each file it runs exists, and that the build left nothing
// that no source produces. A benchmark that spells a dist/ path by hand fails here too: that is how
// `dist/engine/src/index.js` outlived its source and broke `npm run bench -- engine` on fresh clones only.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { staleOutputs } from './stale-dist.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface BenchEntry {
  /** The benchmark file that names it, relative to the repository. */
  file: string;
  /** The TypeScript source it names. */
  source: string;
  /** builtUrl: imported; builtPath: run or read as a file. */
  use: 'import' | 'path';
}

export interface BenchEntryScan {
  entries: BenchEntry[];
  /** `file: line` of every dist/ path spelled by hand (outside bench/lib/dist.ts). */
  handWritten: string[];
}

function benchFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? benchFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

// builtUrl('engine/index.ts') or builtPath("agent/cli/mnn-edge.ts"); a name that is not a literal cannot be
// checked and is reported as hand-written.
const NAMED = /\bbuilt(Url|Path)\(\s*(['"])([^'"]+)\2/g;
const DYNAMIC = /\bbuilt(Url|Path)\(\s*[^'"\s)]/;
// 'dist' as a path segment: join(x, 'dist', …) or '…/dist/…'. The dashboard's own build (dashboard/dist) is not
// tsc's and stays allowed.
const DIST_SEGMENT = /(['"])dist\1|['"`](?:\.{1,2}\/)*dist\/|\/dist\/[\w./-]+\.js\b/;

export function scanBench(benchDir: string = join(ROOT, 'bench')): BenchEntryScan {
  const entries: BenchEntry[] = [];
  const handWritten: string[] = [];
  for (const path of benchFiles(benchDir)) {
    const file = relative(ROOT, path);
    const lines = readFileSync(path, 'utf8').split('\n');
    for (const [i, line] of lines.entries()) {
      for (const m of line.matchAll(NAMED))
        entries.push({ file, source: m[3]!, use: m[1] === 'Url' ? 'import' : 'path' });
      if (file === 'bench/lib/dist.ts') continue;
      const trimmed = line.trim();
      if (trimmed.startsWith('//') || trimmed.startsWith('/*') || trimmed.startsWith('*')) continue;
      if (DYNAMIC.test(line) || (DIST_SEGMENT.test(line) && !/['"]dashboard['"],\s*['"]dist['"]/.test(line)))
        handWritten.push(`${file}:${i + 1}: ${trimmed}`);
    }
  }
  return { entries, handWritten };
}

/** Problems with the names alone: sources that do not exist or that the build does not compile. */
export function checkNames(scan: BenchEntryScan, root: string = ROOT): string[] {
  const include = (
    JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] }
  ).include;
  const problems = scan.handWritten.map((h) => `${h}: name the source through builtPath()/builtUrl()`);
  for (const e of scan.entries) {
    if (!existsSync(join(root, e.source))) problems.push(`${e.file}: ${e.source} does not exist`);
    else if (!include.some((inc) => e.source === inc || e.source.startsWith(`${inc}/`)))
      problems.push(
        `${e.file}: ${e.source} is not compiled by tsconfig.build.json (include: ${include.join(', ')})`,
      );
  }
  return problems;
}

async function main(): Promise<void> {
  const scan = scanBench();
  const problems = checkNames(scan);
  if (problems.length === 0 && !process.argv.includes('--no-build')) {
    const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8' });
    if (build.status !== 0)
      problems.push(
        `npm run build failed (exit ${build.status}):\n${(build.stdout + build.stderr).slice(-3000)}`,
      );
    else {
      const dist = join(ROOT, 'dist');
      for (const stale of staleOutputs(dist, ROOT)) problems.push(`dist/${stale}: no source produces it`);
      for (const e of scan.entries) {
        const built = join(dist, e.source.replace(/\.ts$/, '.js'));
        if (!existsSync(built))
          problems.push(`${e.file}: ${relative(ROOT, built)} was not built from ${e.source}`);
        else if (e.use === 'import') {
          try {
            await import(pathToFileURL(built).href);
          } catch (err) {
            problems.push(`${e.file}: importing ${relative(ROOT, built)} failed: ${(err as Error).message}`);
          }
        }
      }
    }
  }
  const sources = [...new Set(scan.entries.map((e) => e.source))];
  if (problems.length > 0) {
    console.error(`bench entry points: ${problems.length} problem(s)\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`bench entry points: ${sources.length} built sources load (${sources.join(', ')})`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
