// `npx tsx scripts/assemble-wake.ts OUT_DIR [--keyword NAME]…`: the shipped keyword as a wake package tree
// (models/wake-shipped/assemble.ts; docs/WAKE.md "Shipped keyword"). The Debian packaging calls the same
// function; the Yocto recipe does the same steps with BitBake's fetcher and a native MNNConvert.
import { resolve } from 'node:path';
import { assembleShippedWake } from '../models/wake-shipped/assemble.js';
import { REPO_KEYWORDS_DIR } from '../models/wake-shipped/keyword-source.js';

async function main(argv: string[]): Promise<void> {
  let out: string | undefined;
  const names: string[] = [];
  let keywordsDir = REPO_KEYWORDS_DIR;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--keyword') names.push(argv[++i] ?? '');
    else if (a === '--keywords-dir') keywordsDir = resolve(argv[++i] ?? '');
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else out = resolve(a);
  }
  if (!out) throw new Error('usage: assemble-wake.ts OUT_DIR [--keyword NAME]… [--keywords-dir DIR]');
  await assembleShippedWake({ keywordsDir, outDir: out, names, log: (l) => console.log(l) });
  console.log(`wrote ${out}`);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(`assemble-wake: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
