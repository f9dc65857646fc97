import { readFileSync } from 'node:fs';
import test from 'ava';
import { capabilitiesSchemaPath, capabilitiesSchemaText } from '../../scripts/export-schemas/capabilities.js';

test('docs/schemas/capabilities.schema.json matches the schema in agent/detect/schema.ts', (t) => {
  t.is(
    readFileSync(capabilitiesSchemaPath, 'utf8'),
    capabilitiesSchemaText(),
    'stale: run npx tsx scripts/export-schemas/capabilities.ts',
  );
});
