// Writes docs/schemas/model-package.schema.json from the schema object the agent validates with, so the
// document operators and packaging tools read can never drift from the code:
//   npx tsx scripts/export-model-package-schema.ts [--check]
// --check exits 1 when the committed file differs (for CI).
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { modelManifestSchema } from '../models/manifest/schema.js';

const out = resolve(
  fileURLToPath(new URL('.', import.meta.url)),
  '..',
  'docs',
  'schemas',
  'model-package.schema.json',
);
const text = `${JSON.stringify(modelManifestSchema, null, 2)}\n`;
if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(out, 'utf8');
  } catch {
    // missing counts as stale
  }
  if (current !== text) {
    console.error(`${out} is stale: run npx tsx scripts/export-model-package-schema.ts`);
    process.exit(1);
  }
  console.log(`${out} is up to date`);
} else {
  writeFileSync(out, text);
  console.log(`wrote ${out}`);
}
