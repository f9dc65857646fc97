// Writes docs/schemas/capabilities.schema.json from the schema object the agent validates capability caches with,
// so the document fleet tools read cannot drift from the code:
//   npx tsx scripts/export-schemas/capabilities.ts [--check]
// --check exits 1 when the committed file differs (for CI).
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { capabilitiesSchema } from '../../agent/detect/schema.js';

export const capabilitiesSchemaPath = resolve(
  fileURLToPath(new URL('.', import.meta.url)),
  '..',
  '..',
  'docs',
  'schemas',
  'capabilities.schema.json',
);

export function capabilitiesSchemaText(): string {
  return `${JSON.stringify(capabilitiesSchema, null, 2)}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = capabilitiesSchemaText();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(capabilitiesSchemaPath, 'utf8');
    } catch {
      // missing counts as stale
    }
    if (current !== text) {
      console.error(`${capabilitiesSchemaPath} is stale: run npx tsx scripts/export-schemas/capabilities.ts`);
      process.exit(1);
    }
    console.log(`${capabilitiesSchemaPath} is up to date`);
  } else {
    writeFileSync(capabilitiesSchemaPath, text);
    console.log(`wrote ${capabilitiesSchemaPath}`);
  }
}
