// What in a dist/ tree no source of ours produces any more: tsc's output (X.js, X.js.map) of a source X.ts that
// was moved or removed. The bundled CLI's chunks (dist/agent/cli/chunk-*.js, scripts/bundle-agent.mjs) come from
// the bundle, not from one source, and are replaced whole by each bundle run.
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const BUNDLE_CHUNK = /^agent\/cli\/chunk-[A-Z0-9]+\.js(\.map)?$/;

/** Paths (relative to distDir) of outputs with no source under root. */
export function staleOutputs(distDir: string, root: string): string[] {
  const stale: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        walk(path);
        continue;
      }
      const rel = relative(distDir, path);
      if (BUNDLE_CHUNK.test(rel)) continue;
      const m = /^(.*)\.(js|mjs)(\.map)?$/.exec(rel);
      const source = m ? `${m[1]}.${m[2] === 'mjs' ? 'mts' : 'ts'}` : undefined;
      if (source === undefined || !existsSync(join(root, source))) stale.push(rel);
    }
  };
  if (existsSync(distDir)) walk(distDir);
  return stale.sort();
}
