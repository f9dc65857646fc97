// `npx tsx ota/tools/export-schemas.ts [dir]`: writes the OTA documents' JSON schemas (default docs/schemas), generated
// from the schemas the code validates with; a unit test fails when the published files drift from them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jobStatusSchema, otaJobSchema } from '../jobs/job.js';
import { rootRotationJobSchema } from '../jobs/root-job.js';
import { rootBodySchema, signedRootSchema } from '../trust/root.js';
import { signedTargetsSchema, targetsBodySchema } from '../trust/targets.js';

export function otaSchemaFiles(): Record<string, string> {
  const text = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
  return {
    'ota-targets.schema.json': text(targetsBodySchema),
    'ota-signed-targets.schema.json': text(signedTargetsSchema),
    'ota-job.schema.json': text(otaJobSchema),
    'ota-status.schema.json': text(jobStatusSchema),
    'ota-root.schema.json': text(rootBodySchema),
    'ota-signed-root.schema.json': text(signedRootSchema),
    'ota-root-rotation.schema.json': text(rootRotationJobSchema),
  };
}

export function writeOtaSchemas(dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return Object.entries(otaSchemaFiles()).map(([name, text]) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? resolve(fileURLToPath(import.meta.url), '..', '..', 'docs', 'schemas');
  for (const f of writeOtaSchemas(dir)) console.log(f);
}
