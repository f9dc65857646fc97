// Empties dist/ before `npm run build`. tsc only ever writes: a source that was moved or removed leaves its old
// .js behind, and a benchmark, the stage (scripts/stage.ts without --build) or a package made from dist/ would
// load or ship it (a stale dist/engine/src/index.js once hid a benchmark's broken import). Deleting everything
// rather than only what no source produces costs nothing here: the build is not incremental (no tsbuildinfo),
// so tsc writes every file again either way.
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
rmSync(dist, { recursive: true, force: true });
